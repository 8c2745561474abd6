"""Policy memory's pure model: the `PolicyEmbedding` aggregate, its value objects and the
rules of search (thresholds, pagination, cursors, filters). No I/O."""
