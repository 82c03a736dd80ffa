"""Memory services: writes on memories (`memory_writes`), imports, snapshots and proposals. Services
layer: below the transports and `sending`, above `continuity.rules`.
"""
