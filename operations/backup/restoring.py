"""Restoring a backup into an empty database and data dir.

Nothing is written until the whole backup checks out: first the backup itself
(the manifest against its digest, every member against the manifest: sha256
and size, every blob's name against its sha256), then the target (the
manifest's schema against this database's migrations, the database and the
data dir empty). Then every blob is placed (its bytes hashed again as
they are copied: a blob whose bytes are not its name is refused), and every
row is inserted in one transaction, models in dependency order, primary keys
kept, raw (no `auto_now`, no signal), after which PostgreSQL's sequences are
moved past the explicit ids. Any failure removes the blobs already placed and
rolls the rows back, so a refused restore leaves the instance as it was.

Memory: rows are read line by line and inserted in batches of `ROW_BATCH`;
blobs are copied in chunks.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.core.management.color import no_style
from django.core.serializers.base import DeserializationError
from django.core.serializers.jsonl import Deserializer
from django.db import DatabaseError, connection, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Model

from operations.backup import members
from operations.backup.refusals import BackupRefused
from transcript.attachments import store
from transcript.models import MessageAttachment, StalePrompt, manifest_entries_conversation_settle

__all__ = ["BackupRefused", "RestoreCheck", "RestoreReport", "backup_restore", "backup_restore_check"]

ROW_BATCH = 500
READ_CHUNK = 1 << 16


@dataclass
class RestoreReport:
    rows: dict[str, int] = field(default_factory=dict)
    blobs: int = 0
    damaged_blobs: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RestoreCheck:
    """What a restore of a backup would put back (the dry run): rows per model, blobs, when it was made."""

    rows: dict[str, int]
    blobs: int
    created_at: str = ""


def backup_restore_check(path: Path, *, require_empty: bool = True) -> RestoreCheck:
    """Every check `backup_restore` makes before it writes, and nothing more: BackupRefused when a restore here
    would be refused (a damaged or foreign backup, a newer schema, and unless `require_empty` is false, a
    database or data dir that holds data)."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BackupRefused(f"{path.name} is not a readable backup zip ({exc}).") from exc
    with archive:
        manifest = verified_manifest(archive)
        verify_members(archive, manifest)
        refuse_unless_schema_fits(manifest)
        if require_empty:
            _refuse_unless_empty()
    rows = {entry["model"]: int(entry.get("count", 0)) for entry in manifest["models"]}
    blobs = sum(1 for name in manifest["members"] if name.startswith(members.BLOBS_PREFIX))
    return RestoreCheck(rows=rows, blobs=blobs, created_at=str(manifest.get("created_at", "")))


def backup_restore(path: Path) -> RestoreReport:
    """Restore the backup at `path`; BackupRefused (nothing written) when it cannot be."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BackupRefused(f"{path} is not a readable backup zip ({exc}).") from exc
    with archive:
        manifest = verified_manifest(archive)
        verify_members(archive, manifest)
        refuse_unless_schema_fits(manifest)
        _refuse_unless_empty()
        placed: list[Path] = []
        try:
            report = RestoreReport(damaged_blobs=list(manifest["damaged_blobs"]))
            report.blobs = _place_blobs(archive, manifest, placed)
            with transaction.atomic():
                report.rows = insert_rows(archive, manifest)
        except BaseException:
            for blob in placed:
                store.remove(blob)
            raise
    return report


# --- Checks before anything is written -------------------------------------------------


def _read_member(archive: zipfile.ZipFile, name: str) -> bytes:
    try:
        return archive.read(name)
    except KeyError as exc:
        raise BackupRefused(f"The backup has no {name}: it is not an Elion backup, or it is incomplete.") from exc
    except (zipfile.BadZipFile, OSError) as exc:
        raise BackupRefused(f"The backup's {name} cannot be read ({exc}).") from exc


def verified_manifest(archive: zipfile.ZipFile) -> dict:
    """The backup's manifest, checked against its digest; `BackupRefused` when they differ."""
    raw = _read_member(archive, members.MANIFEST)
    expected = _read_member(archive, members.MANIFEST_DIGEST).decode(errors="replace").strip()
    if hashlib.sha256(raw).hexdigest() != expected:
        raise BackupRefused("The backup's manifest does not match its sha256 (manifest.sha256): it was altered.")
    try:
        manifest = json.loads(raw)
    except ValueError as exc:
        raise BackupRefused("The backup's manifest is not JSON.") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != members.FORMAT:
        raise BackupRefused("This zip is not an Elion backup (its manifest names another format).")
    if manifest.get("version") != members.VERSION:
        raise BackupRefused(
            f"This backup is format version {manifest.get('version')!r}; this version of Elion restores "
            f"version {members.VERSION}."
        )
    known = {members.model_label(model) for model in members.backed_up_models()}
    for entry in manifest["models"]:
        if isinstance(entry, dict) and isinstance(entry.get("model"), str):
            entry["model"] = members.label_now(entry["model"])
        if entry["model"] not in known:
            raise BackupRefused(f"The backup holds rows of {entry['model']}, which this version of Elion does not know.")
        if entry["member"] not in manifest["members"]:
            raise BackupRefused(f"The manifest lists {entry['member']} without its sha256.")
    return manifest


def refuse_unless_schema_fits(manifest: dict) -> None:
    """Refuse a backup whose migrations are not this database's (`BackupRefused`)."""
    applied = {
        (app, name) for app, name in MigrationRecorder(connection).applied_migrations() if app in members.APPS
    }
    if not any(app == "conversations" for app, _ in applied):
        raise BackupRefused("The database has no Elion tables yet: run `manage.py migrate` first, then restore.")
    missing = sorted(
        f"{app}.{name}" for app, names in manifest["migrations"].items() for name in names if (app, name) not in applied
    )
    if missing:
        raise BackupRefused(
            "The backup was made by a newer version of Elion: this database lacks the migrations "
            + ", ".join(missing)
            + ". Upgrade the code and run `manage.py migrate`, then restore."
        )


def _refuse_unless_empty() -> None:
    for model in members.all_app_models():
        label = members.model_label(model)
        if label not in members.SINGLETONS and model._base_manager.exists():
            raise BackupRefused(
                f"The database is not empty (it holds {model._meta.verbose_name_plural}, {label}): a backup is "
                "restored only into a freshly migrated database. Nothing was changed."
            )
    if members.data_dir_has_blobs():
        raise BackupRefused(
            f"The data dir is not empty: {store.root()} already holds attachment blobs. Restore into a fresh data "
            "dir (ELION_DATA_DIR / ELION_ATTACHMENT_ROOT). Nothing was changed."
        )


def _member_digest(archive: zipfile.ZipFile, name: str) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    try:
        with archive.open(name) as member:
            while chunk := member.read(READ_CHUNK):
                digest.update(chunk)
                size += len(chunk)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BackupRefused(f"The backup's {name} is damaged ({exc}).") from exc
    return digest.hexdigest(), size


def verify_members(archive: zipfile.ZipFile, manifest: dict) -> None:
    """Check every member against the manifest (sha256, size; a blob's name is its sha256), before anything
    is written."""
    listed = set(manifest["members"])
    present = set(archive.namelist()) - {members.MANIFEST, members.MANIFEST_DIGEST}
    if present != listed:
        strays = sorted(present - listed)[:3]
        lost = sorted(listed - present)[:3]
        raise BackupRefused(f"The backup's members differ from its manifest (not listed: {strays}, missing: {lost}).")
    damaged = set(manifest["damaged_blobs"])
    for name, entry in manifest["members"].items():
        if name.startswith(members.BLOBS_PREFIX):
            target = members.blob_target(name)
            if target is None:
                raise BackupRefused(f"The backup holds {name}, which is no blob of any store.")
            if name not in damaged and target[1] != entry["sha256"]:
                raise BackupRefused(f"The blob {name} does not hash to its name in the manifest: it was altered.")
        if _member_digest(archive, name) != (entry["sha256"], entry["size"]):
            raise BackupRefused(f"{name} does not match the sha256 and size in the manifest: it was altered or damaged.")


# --- Writing ---------------------------------------------------------------------------


def _place_blobs(archive: zipfile.ZipFile, manifest: dict, placed: list[Path]) -> int:
    damaged = set(manifest["damaged_blobs"])
    count = 0
    for name in manifest["members"]:
        target = members.blob_target(name)
        if target is None or name in damaged:
            continue
        directory, sha256 = target
        with archive.open(name) as source:
            try:
                store.write_checked_stream(directory, source, sha256, READ_CHUNK)
            except store.BlobProblem as exc:
                raise BackupRefused(f"The blob {name} does not hash to its name: it was altered.") from exc
        placed.append(store.blob_path(directory, sha256))
        count += 1
    return count


def _rows(archive: zipfile.ZipFile, member: str, model: type[Model]) -> Iterator[Model]:
    with archive.open(member) as raw:
        lines = io.TextIOWrapper(raw, encoding="utf-8")
        try:
            for item in Deserializer(_lines_labelled_now(lines), ignorenonexistent=True):
                if type(item.object) is not model:
                    raise BackupRefused(f"{member} holds a row of another model ({item.object._meta.label_lower}).")
                yield item.object
        except (DeserializationError, UnicodeDecodeError, ValueError) as exc:
            raise BackupRefused(f"{member} holds a row that cannot be read ({exc}).") from exc


def _lines_labelled_now(lines: Iterator[str]) -> Iterator[str]:
    """The member's lines, each row of a model that moved app since the backup (issue 45) under its label now;
    every other line as it is (a line that is no JSON is left for the deserializer to refuse)."""
    for line in lines:
        if '"conversations.' in line[:80]:
            try:
                row = json.loads(line)
            except ValueError:
                yield line
                continue
            if isinstance(row, dict) and isinstance(row.get("model"), str):
                moved = members.label_now(row["model"])
                if moved != row["model"]:
                    line = json.dumps({**row, "model": moved})
        yield line


def _batch_completed(model: type[Model], batch: list[Model]) -> None:
    """Columns derived from rows restored before: filled where an older backup lacks them, checked where not.

    A manifest entry's `conversation` (conversations 0015) is its message's;
    a backup made before the column existed has none, so each entry takes its
    message's (read from the rows just restored); an entry naming another
    conversation than its message's is refused, as the app refuses to write one.
    """
    if model is MessageAttachment:
        try:
            manifest_entries_conversation_settle(batch)
        except ValueError as exc:
            raise BackupRefused(f"The backup's attachment manifests do not fit its messages ({exc}).") from exc


def _insert_batch(model: type[Model], batch: list[Model]) -> None:
    _batch_completed(model, batch)
    # raw=True: every column exactly as backed up (`auto_now` and `auto_now_add` do not apply), as loaddata.
    fields = model._meta.local_concrete_fields
    size = max(1, connection.ops.bulk_batch_size(fields, batch))
    for start in range(0, len(batch), size):
        model._base_manager._insert(batch[start : start + size], fields=fields, raw=True)


# The migration that moved a stored prompt's stale mark from its conversation's `prompt_stale` column to a
# `StalePrompt` row of its own (issue 40).
STALE_MARKS_MOVED = ("transcript", "0005_stale_prompts_in_their_own_rows")


def _stale_marks_from_column(archive: zipfile.ZipFile, manifest: dict) -> None:
    """A backup made before `STALE_MARKS_MOVED` keeps its marks in the conversation rows' `prompt_stale`, which
    the deserializer passes over (this version has no such column): each marked conversation gets its
    `StalePrompt` row, so its next send still rebuilds the prompt."""
    app, name = STALE_MARKS_MOVED
    if name in manifest["migrations"].get(app, []):
        return
    labels = {"transcript.conversation", "conversations.conversation"}
    entry = next((entry for entry in manifest["models"] if entry["model"] in labels), None)
    if entry is None:
        return
    marked = []
    with archive.open(entry["member"]) as raw:
        for line in io.TextIOWrapper(raw, encoding="utf-8"):
            row = json.loads(line)  # the rows were read whole already: every line is a row
            if row.get("fields", {}).get("prompt_stale") is True:
                marked.append(StalePrompt(conversation_id=row["pk"]))
    StalePrompt.objects.bulk_create(marked, ignore_conflicts=True)


def insert_rows(archive: zipfile.ZipFile, manifest: dict) -> dict[str, int]:
    """Insert every backed-up row, models in dependency order, keys kept; the count per model. Runs inside
    the caller's transaction."""
    by_label = {entry["model"]: entry for entry in manifest["models"]}
    restored: dict[str, int] = {}
    order = members.backed_up_models()
    for model in order:
        label = members.model_label(model)
        entry = by_label.get(label)
        if entry is None:
            continue
        if (label in members.SINGLETONS and entry["count"]) or label in members.TRIGGER_MADE:
            # The fresh instance's own singleton, or the rows the triggers just made, give way to the backed-up ones.
            model._base_manager.all().delete()
        count = 0
        batch: list[Model] = []
        for row in _rows(archive, entry["member"], model):
            batch.append(row)
            if len(batch) == ROW_BATCH:
                _insert_batch(model, batch)
                count += len(batch)
                batch = []
        if batch:
            _insert_batch(model, batch)
            count += len(batch)
        if count != entry["count"]:
            raise BackupRefused(f"{entry['member']} holds {count} rows; the manifest says {entry['count']}.")
        restored[label] = count
    _stale_marks_from_column(archive, manifest)
    with connection.cursor() as cursor:
        for statement in connection.ops.sequence_reset_sql(no_style(), order):
            cursor.execute(statement)
    try:
        connection.check_constraints(table_names=[model._meta.db_table for model in order])
    except DatabaseError as exc:
        raise BackupRefused(f"The backup's rows do not fit together ({exc}).") from exc
    return restored
