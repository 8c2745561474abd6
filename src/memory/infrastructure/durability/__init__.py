"""Durability adapters: the erasure journal kept beside the backups."""
