"""Small multilingual data sets shipped in the package: the demo's, and the retrieval check's."""
