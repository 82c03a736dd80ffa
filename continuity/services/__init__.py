"""continuity/services."""
