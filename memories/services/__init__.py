"""memories/services."""
