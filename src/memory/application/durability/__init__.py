"""Durability: backups and restores, and the erasures a restore re-applies."""
