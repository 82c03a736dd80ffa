"""continuity/rules."""
