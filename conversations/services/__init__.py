"""conversations/services."""
