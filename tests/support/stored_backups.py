"""A configured backup destination (`backup_env`) and a backup file stored at it (`stored`), for the tests that
restore or verify one."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

import pytest

from elion.models import BackupRecord, BackupStatus
from operations.backup import destinations, encryption

PASSPHRASE = "the keeper's lamp"


@pytest.fixture
def backup_env(settings, tmp_path) -> dict[str, str]:
    env = {
        "ELION_BACKUP_PASSPHRASE": PASSPHRASE,
        "ELION_BACKUP_RECIPIENTS": "",
        "ELION_BACKUP_DIR": str(tmp_path / "backups"),
        "ELION_BACKUP_STAGING_DIR": str(tmp_path / "staging"),
        "ELION_ATTACHMENT_ROOT": str(tmp_path / "attachments"),
        "ELION_BACKUP_S3_BUCKET": "",
    }
    for name, value in env.items():
        setattr(settings, name, value)
    return env


def stored(plain: Path, keys: encryption.BackupKeys | None = None, *, encrypted: bool = True) -> BackupRecord:
    """`plain` (a backup zip) encrypted with `keys` (the configured ones by default) and stored at the destination
    under a name of its own, recorded as a stored backup (not yet verified)."""
    source = plain
    if encrypted:
        source = plain.with_suffix(".zip.age")
        with source.open("wb") as out:
            encryption.encrypt_stream(iter([plain.read_bytes()]), out, keys or encryption.configured_keys())
    destination = destinations.configured_destination()
    record = BackupRecord.objects.create(destination=destination.description, encrypted=encrypted, stored=True,
                                         status=BackupStatus.FAILED,
                                         key=f"elion-backup-{uuid.uuid4().hex}-{source.name}")
    record.size = destination.store(source, record.key)
    record.sha256 = hashlib.sha256(source.read_bytes()).hexdigest()
    record.save()
    return record
