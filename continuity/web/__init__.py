"""The web layer of continuity: the HTTP API for Branch / Fresh Chat, Continuity Cleanup and compaction.

Thin transports over `continuity` services; top layer.
"""
