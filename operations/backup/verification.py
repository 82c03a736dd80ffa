"""Verifying a backup by restoring it: a scratch database and a scratch data dir, in a separate process.

`scratch_restore_verify(zip)` makes an empty database (SQLite: a file in a
scratch data dir; PostgreSQL: `CREATE DATABASE` on the same server) and runs
`manage.py backup_scratch_check` against it in a child process whose only
database is that one (so no migration, data or otherwise, can touch this
instance's own database). The child:

1. applies every migration (they must apply);
2. restores the backup (`restoring.backup_restore`: the manifest, every
   member's sha256 and size, every blob's name against its bytes, rows in one
   transaction; the blobs are placed in the scratch data dir);
3. counts the rows of every model in the scratch database against the
   manifest, hashes every placed blob again against its name, and reads the
   manifest's sample conversation's live branch (`sampling`) against the
   digest the backup recorded;

and writes what it found as JSON. Then the scratch database and dir are
removed. The result: `{"rows": {model: n}, "blobs": n, "sample": {…}}`, or
`VerificationFailed` with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connection

from operations.backup import members
from operations.backup.restoring import backup_restore
from operations.backup.sampling import live_branch_sample

CHECK_COMMAND = "backup_scratch_check"
TIMEOUT_SECONDS = 6 * 3600


class VerificationFailed(Exception):
    """The restore into the scratch database failed or found a difference; the message says what."""


def _scratch_database_url(name: str) -> str:
    cfg = connection.settings_dict
    user = quote(cfg.get("USER") or "", safe="")
    password = quote(str(cfg.get("PASSWORD") or ""), safe="")
    credentials = f"{user}:{password}@" if user else ""
    host = cfg.get("HOST") or "localhost"
    port = f":{cfg['PORT']}" if cfg.get("PORT") else ""
    return f"postgres://{credentials}{host}{port}/{name}"


def _child_env(data_dir: Path, database_url: str) -> dict[str, str]:
    dropped = {"DATABASE_URL", "ELION_SQLITE_PATH", "ELION_ATTACHMENT_ROOT", "ELION_IMPORT_DIR", "REDIS_URL",
               "ELION_BACKUP_STAGING_DIR"}
    env = {name: value for name, value in os.environ.items() if name not in dropped}
    env["ELION_DATA_DIR"] = str(data_dir)
    env["DJANGO_SETTINGS_MODULE"] = os.environ.get("DJANGO_SETTINGS_MODULE", "elion.settings")
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


def scratch_restore_verify(plain_zip: Path, workdir: Path) -> dict:
    """Restore `plain_zip` into a scratch instance and check it (the module docstring); the counts found."""
    scratch = workdir / f"scratch-{uuid.uuid4().hex[:12]}"
    scratch.mkdir(parents=True, mode=0o700)
    report = scratch / "report.json"
    database = None
    try:
        if connection.vendor == "postgresql":
            database = f"elion_verify_{uuid.uuid4().hex[:12]}"
            with connection.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{database}"')
        result = subprocess.run(
            [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), CHECK_COMMAND, str(plain_zip),
             "--report", str(report)],
            env=_child_env(scratch / "data", _scratch_database_url(database) if database else ""),
            capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False,
        )
        if not report.exists():
            tail = (result.stderr or result.stdout or "").strip().splitlines()[-3:]
            raise VerificationFailed("The verifying restore stopped: " + (" ".join(tail) or f"exit {result.returncode}"))
        found = json.loads(report.read_text())
        if found.get("failure"):
            raise VerificationFailed(found["failure"])
        return found["counts"]
    except subprocess.TimeoutExpired as exc:
        raise VerificationFailed(f"The verifying restore took longer than {TIMEOUT_SECONDS} s.") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if database is not None:
            with connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{database}"')


# --- In the child process, whose database and data dir are the scratch ones ---------------------------


def _hashed(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def restored_instance_check(plain_zip: Path) -> dict:
    """Restore `plain_zip` here (an empty, migrated scratch instance) and compare it with its manifest.

    Returns the counts; VerificationFailed (or BackupRefused from the restore) on any difference.
    """
    with zipfile.ZipFile(plain_zip) as archive:
        manifest = json.loads(archive.read(members.MANIFEST))
    report = backup_restore(plain_zip)
    by_label = {members.model_label(model): model for model in members.backed_up_models()}
    rows: dict[str, int] = {}
    for entry in manifest["models"]:
        label = members.label_now(entry["model"])
        found = by_label[label]._base_manager.count()
        if found != entry["count"]:
            raise VerificationFailed(f"{label}: {found} rows after the restore; the manifest says {entry['count']}.")
        rows[label] = found
    blobs = 0
    for member, sha256, path in members.stored_blobs():
        if _hashed(path) != sha256:
            raise VerificationFailed(f"The restored blob {member} does not hash to its name.")
        blobs += 1
    expected_blobs = manifest["blobs"] - len(manifest["damaged_blobs"])
    if blobs != expected_blobs or report.blobs != expected_blobs:
        raise VerificationFailed(f"{blobs} blobs after the restore; the manifest holds {expected_blobs} intact ones.")
    sample = manifest.get("sample")
    if sample:
        again = live_branch_sample(sample["conversation"])
        if again != sample:
            raise VerificationFailed(
                f"The live branch of conversation {sample['conversation']} reads differently after the restore."
            )
    return {"rows": rows, "blobs": blobs, "damaged_blobs": len(manifest["damaged_blobs"]), "sample": sample}
