"""History search: chat events, conversation windows, the sweep's watermark, hybrid results,
feature flags and retention, as pure rules."""
