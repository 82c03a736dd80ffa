"""Writes on whole conversations and folders: create, rename, move, rewind, fork.

Creation captures the prior thread's handoff and the memory snapshot in one
transaction (`services`); fork copies a live branch with verified blobs
(`fork`). Service layer: imports continuity, memories' snapshot capture,
visibility and the base layer; never sending or web.
"""
