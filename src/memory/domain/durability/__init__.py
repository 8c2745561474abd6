"""Durability: what survives a restore of the database."""
