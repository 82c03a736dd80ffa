"""The web layer of memories: the Memories API and page. Thin transports over `memories` services; top layer."""
