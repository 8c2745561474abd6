"""The background workers of each context (one module per context), started and stopped by
the composition root: `memory serve`'s app lifespan, or `memory.api.open(workers=True)`."""
