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
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
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


def write_bytes(store: Path, data: bytes, sha256: str) -> str:
    """Place already-verified bytes as blob `sha256` of `store` (temp, fsync, rename).

    Answers the published file's identity (`file_identity`): the file that
    holds exactly these bytes, so its identity may stand in for their hash.
    """
    target = blob_path(store, sha256)
    fd, tmp_name = tempfile.mkstemp(dir=_tmp_dir(), prefix="copy-")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
            _publish(tmp, target)
            # fstat of the descriptor that wrote the bytes (chmod and rename are done),
            # never a stat of the path, which another writer could have replaced since.
            return file_identity(os.fstat(out.fileno()))
    finally:
        tmp.unlink(missing_ok=True)


def write_checked_stream(store: Path, source: BinaryIO, sha256: str, chunk_bytes: int = 1 << 16) -> int:
    """Copy `source` in chunks into blob `sha256` of `store`, published only if the bytes hash to `sha256`.

    Memory stays at one chunk whatever the blob's size (a restore places blobs
    this way). Answers the size written; BlobProblem("tampered") and nothing
    published when the bytes are not that blob.
    """
    target = blob_path(store, sha256)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=_tmp_dir(), prefix="restore-")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            while chunk := source.read(chunk_bytes):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
            if digest.hexdigest() != sha256:
                raise BlobProblem("tampered")
            out.flush()
            os.fsync(out.fileno())
            _publish(tmp, target)
        return size
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
    data = read_identified(store, sha256).data
    if not sha256_matches(data, sha256, size):
        raise BlobProblem("tampered")
    return data


def sha256_matches(data: bytes, sha256: str, size: int) -> bool:
    """Whether `data` is the blob `sha256` of `size` bytes: the one place a blob's bytes are hashed."""
    return len(data) == size and hashlib.sha256(data).hexdigest() == sha256


# --- File identity ---------------------------------------------------------------------


def file_identity(stat: os.stat_result) -> str:
    """`st_dev:st_ino:st_size:st_mtime_ns:st_ctime_ns`: which file this is and whether it changed.

    Replacing the file (a new inode), truncating or rewriting it (size, mtime
    and ctime), even `touch` or `chmod` (ctime) each change it.
    """
    return f"{stat.st_dev}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}"


def blob_identity(store: Path, sha256: str) -> str | None:
    """The blob's file identity from one stat(); None when it is absent."""
    try:
        return file_identity(os.stat(blob_path(store, sha256)))
    except (FileNotFoundError, NotADirectoryError):
        return None


@dataclass(frozen=True)
class IdentifiedRead:
    """A blob's bytes, read through one descriptor, with the file's identity before and after the read."""

    data: bytes
    before: str
    after: str

    @property
    def steady(self) -> bool:
        """Nothing changed the file while it was read: `before` names the file these bytes came from."""
        return self.before == self.after


def read_identified(store: Path, sha256: str) -> IdentifiedRead:
    """The blob's bytes (not hashed) with its identity; BlobProblem("missing") when absent."""
    try:
        with blob_path(store, sha256).open("rb") as blob:
            before = file_identity(os.fstat(blob.fileno()))
            data = blob.read()
            after = file_identity(os.fstat(blob.fileno()))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
        raise BlobProblem("missing") from exc
    return IdentifiedRead(data=data, before=before, after=after)


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
