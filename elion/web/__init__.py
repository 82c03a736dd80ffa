"""elion/web."""
