"""Streaming a backup: one zip, produced chunk by chunk with bounded memory.

A `zipfile.ZipFile` writes into `_Drain`, a write-through buffer that is
emptied (its bytes yielded) after every batch of rows and every blob chunk.
Rows are read with `.iterator()` in batches of `ROW_BATCH`; blobs are copied
in chunks of `BLOB_CHUNK`. So memory holds at most one batch of rows (their
model instances and their JSON), or one blob chunk, plus deflate's window and
one small record per member (its manifest entry and the zip's central
directory entry): never the rows or the blobs of the whole backup.

Every read runs in one transaction (on PostgreSQL REPEATABLE READ, READ ONLY;
on SQLite a deferred read transaction under WAL, `_snapshot`), so the rows are one consistent
snapshot even while the app keeps writing. Blobs are read from the stores as
they stand; each one's bytes are hashed as they are copied.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from typing import IO

from django.core.serializers.json import DjangoJSONEncoder
from django.core.serializers.jsonl import Serializer as JsonlSerializer
from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Model
from django.utils import timezone

from operations.backup import members
from operations.backup.sampling import live_branch_sample

ROW_BATCH = 500
BLOB_CHUNK = 1 << 16  # 64 KiB


class _Drain(io.RawIOBase):
    """A write-only, unseekable buffer: zipfile writes into it, `take()` empties it."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


class ExactJSONEncoder(DjangoJSONEncoder):
    """Django's encoder, except that times keep their microseconds (Django's cuts them to milliseconds)."""

    def default(self, o: object) -> object:
        if isinstance(o, dt.datetime | dt.time):
            return o.isoformat()
        return super().default(o)


class RowSerializer(JsonlSerializer):
    """Django's JSON-lines serialization (fields by name, foreign keys by id) with exact times."""

    def end_object(self, obj: Model) -> None:
        json.dump(self.get_dump_object(obj), self.stream, cls=ExactJSONEncoder, ensure_ascii=False)
        self.stream.write("\n")
        self._current = None


def rows_jsonl(rows: Iterable[Model]) -> bytes:
    """One JSON line per row, in the documented format."""
    return RowSerializer().serialize(rows).encode()


def _batches(rows: Iterator[Model], size: int) -> Iterator[list[Model]]:
    while batch := list(islice(rows, size)):
        yield batch


@contextmanager
def _snapshot() -> Iterator[None]:
    """One transaction for every read: on PostgreSQL a repeatable-read, read-only one; on SQLite a deferred one.

    SQLite: Django opens every transaction here `BEGIN IMMEDIATE` (settings:
    two writers queue instead of failing midway), which takes the write lock:
    a backup inside one would hold every send for its whole length. So the
    backup begins its own `BEGIN DEFERRED` transaction, which under WAL reads
    one snapshot from its first SELECT to its end and takes no write lock:
    sends go on writing beside it (`bench/backup_cost.py` measures them).
    """
    if connection.vendor == "sqlite" and not connection.in_atomic_block:
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("BEGIN DEFERRED")
        try:
            yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("ROLLBACK")  # it only read
        return
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


class _Member:
    """One member being written: its sha256 and size of the uncompressed bytes."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self.digest.update(data)
        self.size += len(data)
        self.out.write(data)

    def entry(self) -> dict:
        return {"sha256": self.digest.hexdigest(), "size": self.size}


def _applied_migrations() -> dict[str, list[str]]:
    applied: dict[str, list[str]] = {}
    for app, name in MigrationRecorder(connection).applied_migrations():
        if app in members.APPS:
            applied.setdefault(app, []).append(name)
    return {app: sorted(names) for app, names in sorted(applied.items())}


def backup_chunks(*, row_batch: int = ROW_BATCH) -> Iterator[bytes]:
    """The backup zip, as consecutive non-empty chunks of bytes (the memory bound: the module docstring)."""
    return (chunk for chunk in _zip_parts(row_batch) if chunk)


def _zip_parts(row_batch: int) -> Iterator[bytes]:
    drain = _Drain()
    entries: dict[str, dict] = {}
    counts: list[dict] = []
    damaged: list[str] = []
    with _snapshot(), zipfile.ZipFile(drain, "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as archive:
        created_at = timezone.now()
        sample = live_branch_sample()  # read inside the snapshot, like every row
        for model in members.backed_up_models():
            name = members.model_member(model)
            count = 0
            with archive.open(_info(name, created_at, zipfile.ZIP_DEFLATED), "w", force_zip64=True) as out:
                member = _Member(out)
                rows = model._base_manager.order_by("pk").iterator(chunk_size=row_batch)
                for batch in _batches(rows, row_batch):
                    member.write(rows_jsonl(batch))
                    count += len(batch)
                    yield drain.take()
            entries[name] = member.entry()
            counts.append({"model": members.model_label(model), "member": name, "count": count})
        for name, sha256, path in members.stored_blobs():
            try:
                blob = path.open("rb")
            except FileNotFoundError:
                continue  # removed (an unreferenced blob past its grace period) since the store was listed
            with blob, archive.open(_info(name, created_at, zipfile.ZIP_STORED), "w", force_zip64=True) as out:
                member = _Member(out)
                while chunk := blob.read(BLOB_CHUNK):
                    member.write(chunk)
                    yield drain.take()
            entries[name] = member.entry()
            if entries[name]["sha256"] != sha256:
                damaged.append(name)
        manifest = _manifest_bytes(created_at, counts, entries, damaged, sample)
        archive.writestr(_info(members.MANIFEST, created_at, zipfile.ZIP_DEFLATED), manifest)
        archive.writestr(
            _info(members.MANIFEST_DIGEST, created_at, zipfile.ZIP_STORED),
            hashlib.sha256(manifest).hexdigest().encode() + b"\n",
        )
    yield drain.take()


def _info(name: str, when: dt.datetime, compress_type: int) -> zipfile.ZipInfo:
    stamp = timezone.localtime(when, dt.UTC)
    info = zipfile.ZipInfo(name, date_time=stamp.timetuple()[:6])
    info.compress_type = compress_type
    info.external_attr = 0o600 << 16
    return info


def _manifest_bytes(
    created_at: dt.datetime, counts: list[dict], entries: dict[str, dict], damaged: list[str], sample: dict | None
) -> bytes:
    manifest = {
        "format": members.FORMAT,
        "version": members.VERSION,
        "created_at": created_at.isoformat(),
        "database": connection.vendor,
        "migrations": _applied_migrations(),
        "models": counts,
        "not_backed_up": members.NOT_BACKED_UP,
        "blobs": sum(1 for name in entries if name.startswith(members.BLOBS_PREFIX)),
        # Blobs whose bytes already did not hash to their name when backed up: kept, never restored.
        "damaged_blobs": damaged,
        # One conversation's live branch as a digest: a verifying restore reads it again (`sampling`).
        "sample": sample,
        "members": entries,
    }
    return json.dumps(manifest, indent=1, sort_keys=False).encode()
