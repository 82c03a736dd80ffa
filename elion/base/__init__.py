"""elion/base."""
