"""Template tags of the memories app (web layer): the chat's memory proposal cards."""
