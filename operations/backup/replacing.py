"""Restoring a backup over a lived-in instance (`manage.py restore PATH --replace`), in steps a crash cannot
leave half-done.

1. `checked`: the backup is checked whole, as for any restore (manifest, every
   member's sha256 and size, every blob's name, the schema). Nothing is
   written before this passes.
2. `safety backup`: the current state is backed up (a plain zip under
   `<data dir>/before-restore/`; the data dir holds the same data in clear) and
   that backup is verified by restoring it into a scratch instance; a failure
   stops here, with nothing changed.
3. `blobs placed`: the backup's blobs are added to the stores. Stores are
   content-addressed, so adding a blob changes nothing the current rows see;
   a blob already present is left as it is.
4. `rows replaced`: in ONE transaction, every row of the backed-up apps is
   deleted and the backup's rows inserted (the restore's own insertion:
   models in dependency order, keys kept, counts checked, constraints
   checked). A crash before the commit leaves the old rows, a crash after it
   the new ones: never a mix.
5. `old blobs removed`: blobs no longer named by the backup are removed. A
   crash before this leaves unreferenced blobs, which the hourly attachment
   collection removes after its grace period.

`progress(step)` is told each step as it begins (the command prints them; the
kill test stops the process at each one).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from operations.backup import members, restoring
from operations.backup.refusals import BackupRefused
from operations.backup.verification import VerificationFailed, scratch_restore_verify
from operations.backup.writing import backup_chunks
from transcript.attachments import store

STEPS = ("checked", "safety backup", "blobs placed", "rows replaced", "old blobs removed")


def _safety_backup() -> Path:
    folder = Path(settings.DATA_DIR) / "before-restore"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    target = folder / f"elion-before-restore-{timezone.now():%Y%m%d-%H%M%S-%f}.zip"
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for chunk in backup_chunks():
            out.write(chunk)
    partial.chmod(0o600)
    partial.replace(target)
    try:
        scratch_restore_verify(target, folder)
    except (VerificationFailed, BackupRefused) as exc:
        raise BackupRefused(f"The backup of the current state did not verify ({exc}); nothing was replaced.") from exc
    return target


def _place_new_blobs(archive: zipfile.ZipFile, manifest: dict, placed: list[Path]) -> set[Path]:
    damaged = set(manifest["damaged_blobs"])
    wanted: set[Path] = set()
    for name in manifest["members"]:
        target = members.blob_target(name)
        if target is None or name in damaged:
            continue
        directory, sha256 = target
        path = store.blob_path(directory, sha256)
        wanted.add(path)
        if path.exists():
            continue
        with archive.open(name) as source:
            try:
                store.write_checked_stream(directory, source, sha256, restoring.READ_CHUNK)
            except store.BlobProblem as exc:
                raise BackupRefused(f"The blob {name} does not hash to its name: it was altered.") from exc
        placed.append(path)
    return wanted


def _delete_every_row() -> None:
    order = members.backed_up_models()
    others = [model for model in members.all_app_models() if model not in order]
    for model in [*others, *reversed(order)]:
        model._base_manager.all()._raw_delete(connection.alias)


def backup_restore_replace(path: Path, progress: Callable[[str], None] = lambda step: None) -> tuple:
    """Replace this instance by the backup at `path` (the module docstring); (report, safety backup path)."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BackupRefused(f"{path} is not a readable backup zip ({exc}).") from exc
    with archive:
        progress("checked")
        manifest = restoring.verified_manifest(archive)
        restoring.verify_members(archive, manifest)
        restoring.refuse_unless_schema_fits(manifest)
        progress("safety backup")
        safety = _safety_backup()
        progress("blobs placed")
        placed: list[Path] = []
        try:
            wanted = _place_new_blobs(archive, manifest, placed)
            progress("rows replaced")
            with transaction.atomic():
                _delete_every_row()
                report = restoring.RestoreReport(damaged_blobs=list(manifest["damaged_blobs"]))
                report.rows = restoring.insert_rows(archive, manifest)
                report.blobs = len(wanted)
        except BaseException:
            for blob in placed:
                store.remove(blob)
            raise
    progress("old blobs removed")
    for _member, _sha256, blob in list(members.stored_blobs()):
        if blob not in wanted:
            store.remove(blob)
    return report, safety
