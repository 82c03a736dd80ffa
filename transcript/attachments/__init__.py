"""Attachments (seed 004): content-addressed blobs with an immutable ordered manifest per message.

Owns the blob store on disk (`store`), upload (`upload`), the manifests a
send commits and reads (`manifests`), verified request parts and downloads
(`projection`), verification before every model projection by recorded file
identity plus the periodic full re-hash (`verification`), the per-process
cache of images' encoded form (`encoded_cache`), and garbage collection
(`gc`). Base
layer: imports models, `transcript.access`, `elion.base.uploads` (reading
uploaded bytes safely) and `elion` utilities only.
"""
