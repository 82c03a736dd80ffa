"""Template filters of the archive pages."""
