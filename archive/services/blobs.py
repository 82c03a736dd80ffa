"""Images of imported conversations, kept as content-addressed blobs.

They live in the attachment store's own directory for the archive,
`<ELION_ATTACHMENT_ROOT>/archive/<sha[:2]>/<sha>`, written the store's way
(temporary file, fsync, rename), so identical images across documents are
stored once. The attachment garbage collector sweeps only `uploads/` and
`conversations/`, never this directory; a blob lives as long as an
`ArchiveAttachment` row or a later import may name it.
"""

from __future__ import annotations

from pathlib import Path

from elion.base.uploads import sha256_hex
from transcript.attachments import store
from transcript.attachments.store import BlobProblem

__all__ = ["BlobProblem", "archive_blob_read", "archive_blob_write", "archive_store"]


def archive_store() -> Path:
    return store.root() / "archive"


def archive_blob_write(data: bytes) -> str:
    """Keep `data` as a blob (once per content); answers its sha256."""
    sha256 = sha256_hex(data)
    if store.blob_identity(archive_store(), sha256) is None:
        store.write_bytes(archive_store(), data, sha256)
    return sha256


def archive_blob_read(sha256: str, size: int) -> bytes:
    """The blob's bytes after checking size and hash; BlobProblem ("missing" / "tampered") otherwise."""
    try:
        return store.read_verified(archive_store(), sha256, size)
    except ValueError as exc:  # not a sha256 at all
        raise BlobProblem("missing") from exc
