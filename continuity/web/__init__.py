"""The web layer of continuity: the HTTP API for Branch / Fresh Chat, Continuity Cleanup and compaction, and
the conversation's API shape every app that answers a conversation uses (`conversation_shape`).

Thin transports over `continuity` services; top layer.
"""
