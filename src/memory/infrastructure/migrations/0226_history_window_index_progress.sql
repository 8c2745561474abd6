-- A running index build's share done over all its group indexes (docs/adr/0141), as the
-- builder last copied it: pgvector's HNSW build reports the table blocks it has scanned
-- while it loads the graph, not a total of tuples, so `tuples_total` alone cannot say how far
-- it got.
ALTER TABLE dw_window_indexes ADD COLUMN progress real;
