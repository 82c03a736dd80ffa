"""archive/services."""
