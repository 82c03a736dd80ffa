"""Content-addressed attachment blobs on disk.

Layout under `settings.ELION_ATTACHMENT_ROOT`:

    tmp/                          bytes being written (never read as a blob)
    uploads/<sha[:2]>/<sha>       uploaded, not yet committed to a message
    conversations/<id>/<sha[:2]>/<sha>   the blobs one conversation owns

A blob's name is its sha256, so identical bytes in one store are stored once.
Each conversation owns its own copy (seed 004: a session-owned blob,
independent of the original import path; a fork copies verified content into
the destination store and shares no pathname with its source). Deleting one
store can therefore never break another conversation's manifest.

Every write goes to a temporary file in `tmp/`, is fsynced, then renamed into
place (and the directory fsynced), so a crash leaves either the whole blob or
a stray temporary file the garbage collector removes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

from django.conf import settings

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class BlobProblem(Exception):
    """A referenced blob is missing or its bytes no longer match its identity."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason  # "missing" | "tampered"


def root() -> Path:
    return Path(settings.ELION_ATTACHMENT_ROOT)


def upload_store() -> Path:
    return root() / "uploads"


def conversation_store(conversation_id: UUID | str) -> Path:
    return root() / "conversations" / str(UUID(str(conversation_id)))


def conversation_stores() -> Iterator[tuple[UUID, Path]]:
    for entry in _entries(root() / "conversations"):
        try:
            yield UUID(entry.name), entry
        except ValueError:
            continue


def blob_path(store: Path, sha256: str) -> Path:
    if not _SHA256.match(sha256):
        raise ValueError("not a sha256 hex digest")
    return store / sha256[:2] / sha256


def _tmp_dir() -> Path:
    path = root() / "tmp"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes(store: Path, data: bytes, sha256: str) -> None:
    """Place already-verified bytes as blob `sha256` of `store` (temp, fsync, rename)."""
    target = blob_path(store, sha256)
    fd, tmp_name = tempfile.mkstemp(dir=_tmp_dir(), prefix="copy-")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        _publish(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _publish(tmp: Path, target: Path) -> None:
    os.chmod(tmp, 0o400)  # immutable and private: a store changes only by adding or removing whole blobs
    for attempt in range(3):
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(tmp, target)
            break
        except FileNotFoundError:
            # The collector removed the (empty) shard directory in between.
            if attempt == 2:
                raise
    _fsync_dir(target.parent)


def read_verified(store: Path, sha256: str, size: int) -> bytes:
    """The blob's bytes, after checking their size and sha256; BlobProblem otherwise."""
    try:
        data = blob_path(store, sha256).read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
        raise BlobProblem("missing") from exc
    if len(data) != size or hashlib.sha256(data).hexdigest() != sha256:
        raise BlobProblem("tampered")
    return data


def touch(store: Path, sha256: str) -> bool:
    """Refresh a blob's mtime so the garbage collector's grace period restarts; False if absent."""
    try:
        os.utime(blob_path(store, sha256))
        return True
    except FileNotFoundError:
        return False


def blobs_in(store: Path) -> Iterator[tuple[str, Path]]:
    """The blobs of a store; directories another collector removes meanwhile are skipped."""
    for shard in _entries(store):
        for blob in _entries(shard):
            if _SHA256.match(blob.name):
                yield blob.name, blob


def _entries(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def older_than(path: Path, seconds: float, now: float | None = None) -> bool:
    try:
        return path.stat().st_mtime <= (now if now is not None else time.time()) - seconds
    except FileNotFoundError:
        return False


def remove(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    with contextlib.suppress(OSError):
        path.parent.rmdir()  # only when the shard is now empty
    return True
