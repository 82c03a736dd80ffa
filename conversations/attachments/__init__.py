"""Attachments (seed 004): content-addressed blobs with an immutable ordered manifest per message.

Owns the blob store on disk (`store`), upload, commit and verification before
every model projection (`services`), and garbage collection (`gc`). Base
layer: imports models, `conversations.access`, `archive.uploads` (reading
uploaded bytes safely) and `elion` utilities only.
"""
