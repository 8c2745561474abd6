"""Policy memory's use cases: the commands that record policies, the queries that read the
projection, the projection itself, and the ports they need."""
