"""Backups that run themselves: encrypted with age, stored at a folder, verified by a real restore (issue 42).

Real parts: `pyrage` (age), the folder, and a scratch instance (a child
`manage.py` process migrating and restoring into a scratch SQLite file or a
scratch PostgreSQL database on the test server).
"""

from __future__ import annotations

import hashlib
import json

import pyrage
import pytest
from django.utils import timezone

from elion.models import BackupRecord, BackupStatus
from operations.backup import encryption, runs
from operations.backup.refusals import BackupRefused
from operations.backup.verification import VerificationFailed, scratch_restore_verify
from tests.support.attachment_files import png_bytes
from tests.support.backup_files import backup_file, members_of, rewritten
from tests.support.factories import thread
from transcript.attachments import store
from transcript.models import Message

pytestmark = pytest.mark.timeout(600)
PASSPHRASE = "lighthouse keeper at dawn"


@pytest.fixture
def keyed_folder(settings, tmp_path):
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    settings.ELION_BACKUP_STAGING_DIR = tmp_path / "staging"
    settings.ELION_BACKUP_DIR = str(tmp_path / "backups")
    settings.ELION_BACKUP_PASSPHRASE = PASSPHRASE
    settings.ELION_BACKUP_RECIPIENTS = ""
    settings.ELION_BACKUP_S3_BUCKET = ""
    return tmp_path / "backups"


def small_instance():
    conversation = thread(("user", "Is the lamp lit?"), ("assistant", "Every night."))
    data = png_bytes()
    store.write_bytes(store.conversation_store(conversation.pk), data, hashlib.sha256(data).hexdigest())
    return conversation


def decrypted_members(path, tmp_path, **keys) -> dict[str, bytes]:
    target = tmp_path / "opened.zip"
    encryption.decrypt_file(path, target, **keys)
    return members_of(target)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_backup_is_encrypted_stored_in_the_folder_and_verified_by_restoring_it(keyed_folder, tmp_path):
    conversation = small_instance()
    record = runs.backup_run(runs.backup_start())

    assert record.status == BackupStatus.VERIFIED, record.failure
    assert record.stored and record.encrypted and record.verified_at is not None
    stored = keyed_folder / record.key
    assert stored.stat().st_size == record.size and not list(keyed_folder.glob(".*partial"))
    assert encryption.file_kind(stored) == "age+passphrase"
    assert b"Is the lamp lit?" not in stored.read_bytes()
    # The counts come from the scratch restore: every row, the blob, the sample live branch.
    assert record.counts["rows"]["transcript.message"] == Message.objects.filter(conversation=conversation).count()
    assert record.counts["blobs"] == 1
    assert record.counts["sample"]["conversation"] == str(conversation.pk)
    assert record.counts["sample"]["messages"] == 2
    assert record.counts["restored_from"] == "the stored file, decrypted"
    # The file is a standard age file the owner can open with the passphrase alone.
    assert b"Every night." in decrypted_members(stored, tmp_path, passphrase=PASSPHRASE)[
        "models/transcript.message.jsonl"
    ]
    # Nothing is left in the staging dir.
    assert not any((tmp_path / "staging").iterdir())


@pytest.mark.django_db
def test_without_a_key_or_a_destination_a_backup_is_refused_with_the_reason(keyed_folder, settings):
    settings.ELION_BACKUP_PASSPHRASE = ""
    with pytest.raises(runs.BackupNotConfigured, match="ELION_BACKUP_PASSPHRASE"):
        runs.backup_start()
    settings.ELION_BACKUP_PASSPHRASE = PASSPHRASE
    settings.ELION_BACKUP_DIR = ""
    with pytest.raises(runs.BackupNotConfigured, match="ELION_BACKUP_DIR"):
        runs.backup_start()
    settings.ELION_BACKUP_DIR = str(settings.DATA_DIR / "backups")
    with pytest.raises(runs.BackupNotConfigured, match="inside the data dir"):
        runs.backup_start()
    settings.ELION_BACKUP_DIR = str(keyed_folder)
    settings.ELION_BACKUP_RECIPIENTS = "not-a-key"
    with pytest.raises(runs.BackupNotConfigured, match="no age recipient"):
        runs.backup_start()
    assert not BackupRecord.objects.exists()


@pytest.mark.django_db
def test_encryption_round_trips_with_a_passphrase_and_with_a_recipient_identity_pair(keyed_folder, tmp_path, settings):
    small_instance()
    plain = backup_file(tmp_path)
    identity = pyrage.x25519.Identity.generate()
    for keys, opening in [
        (encryption.BackupKeys(passphrase=PASSPHRASE), {"passphrase": PASSPHRASE}),
        (encryption.BackupKeys(recipients=(str(identity.to_public()),)), {"identities": [identity]}),
    ]:
        sealed = tmp_path / "sealed.age"
        with sealed.open("wb") as out:
            encryption.encrypt_stream(iter([plain.read_bytes()]), out, keys)
        assert encryption.file_kind(sealed) in ("age", "age+passphrase")
        assert decrypted_members(sealed, tmp_path, **opening) == members_of(plain)
        # The wrong key is refused, and leaves no half-written output.
        wrong = {"passphrase": "not it"} if "passphrase" in opening else {"identities": [pyrage.x25519.Identity.generate()]}
        with pytest.raises(BackupRefused):
            decrypted_members(sealed, tmp_path, **wrong)
        assert not (tmp_path / "opened.zip").exists()
        # A truncated file is refused the same way (age authenticates every chunk and the last one).
        cut = tmp_path / "cut.age"
        cut.write_bytes(sealed.read_bytes()[:-100])
        with pytest.raises(BackupRefused, match="truncated or altered"):
            decrypted_members(cut, tmp_path, **opening)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_verification_catches_a_flipped_blob_byte_and_a_missing_row(keyed_folder, tmp_path):
    small_instance()
    plain = backup_file(tmp_path)
    members = members_of(plain)
    assert scratch_restore_verify(plain, tmp_path)["blobs"] == 1

    blob = next(name for name in members if name.startswith("blobs/"))
    flipped = bytearray(members[blob])
    flipped[len(flipped) // 2] ^= 0x01
    with pytest.raises(VerificationFailed, match="altered or damaged"):
        scratch_restore_verify(rewritten(plain, {**members, blob: bytes(flipped)}), tmp_path)

    # A row gone, with the manifest's sha256 of that member made to match: the row count gives it away.
    member = "models/transcript.message.jsonl"
    shorter = b"".join(members[member].splitlines(keepends=True)[1:])
    manifest = json.loads(members["manifest.json"])
    manifest["members"][member] = {"sha256": hashlib.sha256(shorter).hexdigest(), "size": len(shorter)}
    tampered = rewritten(plain, {**members, member: shorter, "manifest.json": json.dumps(manifest).encode()}, reseal=True)
    with pytest.raises(VerificationFailed, match="rows; the manifest says"):
        scratch_restore_verify(tampered, tmp_path)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_verify_again_marks_a_truncated_stored_file_failed_and_keeps_it(keyed_folder):
    small_instance()
    record = runs.backup_run(runs.backup_start())
    assert record.status == BackupStatus.VERIFIED, record.failure
    stored = keyed_folder / record.key
    stored.write_bytes(stored.read_bytes()[:-500])

    again = runs.backup_verify(record)
    assert again.status == BackupStatus.FAILED
    assert "altered" in again.failure
    assert stored.exists()  # kept, shown in red


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_with_recipients_only_the_server_verifies_the_bytes_it_encrypted(keyed_folder, settings, tmp_path):
    identity = pyrage.x25519.Identity.generate()
    settings.ELION_BACKUP_PASSPHRASE = ""
    settings.ELION_BACKUP_RECIPIENTS = str(identity.to_public())
    small_instance()
    record = runs.backup_run(runs.backup_start())
    assert record.status == BackupStatus.VERIFIED, record.failure
    assert record.counts["restored_from"].startswith("the bytes encrypted")
    stored = keyed_folder / record.key
    assert encryption.file_kind(stored) == "age"
    assert "models/transcript.message.jsonl" in decrypted_members(stored, tmp_path, identities=[identity])
    # Verify again: the server cannot decrypt, so it checks the stored bytes and says so.
    again = runs.backup_verify(record)
    assert again.status == BackupStatus.VERIFIED and "sha256" in again.counts["checked"]
    assert again.verified_at >= record.verified_at and again.verified_at <= timezone.now()
