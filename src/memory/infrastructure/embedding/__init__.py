"""Embedding model adapters behind `memory.application.embedding.EmbeddingModel`."""
