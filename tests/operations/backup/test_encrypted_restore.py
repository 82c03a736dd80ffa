"""`manage.py backup --encrypt` and `manage.py restore` of encrypted backups (issue 42): with the passphrase, with an
age identity file; a wrong key, a truncated file, a tampered file and a newer schema are refused with a clear message
before anything changes."""

from __future__ import annotations

import json

import pyrage
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from operations.backup import encryption
from tests.support.backup_files import backup_file, members_of, rewritten
from tests.support.factories import thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]
PASSPHRASE = "a keeper's passphrase"


def sealed(plain, target, keys: encryption.BackupKeys):
    with target.open("wb") as out:
        encryption.encrypt_stream(iter([plain.read_bytes()]), out, keys)
    return target


def test_backup_command_encrypts_with_the_configured_keys(tmp_path, settings):
    thread(("user", "the ferry"), ("assistant", "at dawn"))
    settings.ELION_BACKUP_PASSPHRASE = ""
    settings.ELION_BACKUP_RECIPIENTS = ""
    with pytest.raises(CommandError, match="ELION_BACKUP_PASSPHRASE"):
        call_command("backup", output=str(tmp_path / "no.zip.age"), encrypt=True)
    settings.ELION_BACKUP_PASSPHRASE = PASSPHRASE
    call_command("backup", output=str(tmp_path / "b.zip.age"), encrypt=True)
    assert encryption.file_kind(tmp_path / "b.zip.age") == "age+passphrase"
    encryption.decrypt_file(tmp_path / "b.zip.age", tmp_path / "b.zip", passphrase=PASSPHRASE)
    assert b"at dawn" in members_of(tmp_path / "b.zip")["models/transcript.message.jsonl"]


@pytest.mark.slow
def test_encrypted_backups_restore_with_their_key_and_bad_files_are_refused_first(tmp_path, fresh_instance):
    thread(("user", "the lighthouse"), ("assistant", "lit at dusk"), title="Lamp")
    plain = backup_file(tmp_path)
    identity = pyrage.x25519.Identity.generate()
    identity_file = tmp_path / "key.txt"
    identity_file.write_text(f"# created: today\n# public key: {identity.to_public()}\n{identity}\n")
    with_passphrase = sealed(plain, tmp_path / "p.zip.age", encryption.BackupKeys(passphrase=PASSPHRASE))
    to_recipient = sealed(plain, tmp_path / "r.zip.age", encryption.BackupKeys(recipients=(str(identity.to_public()),)))
    truncated = tmp_path / "cut.zip.age"
    truncated.write_bytes(to_recipient.read_bytes()[:-64])
    tampered = tmp_path / "flipped.zip.age"
    data = bytearray(to_recipient.read_bytes())
    data[len(data) // 2] ^= 0x40
    tampered.write_bytes(bytes(data))
    members = members_of(plain)
    manifest = json.loads(members["manifest.json"])
    manifest["migrations"]["conversations"].append("9999_from_the_future")
    newer_zip = rewritten(plain, {**members, "manifest.json": json.dumps(manifest).encode()}, reseal=True)
    newer = sealed(newer_zip, tmp_path / "newer.zip.age", encryption.BackupKeys(recipients=(str(identity.to_public()),)))

    def restore(path, *extra, passphrase=""):
        fresh_instance.env["ELION_BACKUP_PASSPHRASE"] = passphrase
        return fresh_instance.manage("restore", str(path), *extra, check=False)

    refusals = [
        (restore(with_passphrase), "encrypted with a passphrase: set ELION_BACKUP_PASSPHRASE"),
        (restore(with_passphrase, passphrase="not the passphrase"), "The passphrase does not open this backup"),
        (restore(to_recipient), "give the matching identity (--identity FILE)"),
        (restore(truncated, "--identity", str(identity_file)), "truncated or altered"),
        (restore(tampered, "--identity", str(identity_file)), "truncated or altered"),
        (restore(newer, "--identity", str(identity_file)), "made by a newer version of Elion"),
        (restore(tmp_path / "missing.age"), "is no file"),
    ]
    for result, message in refusals:
        assert result.returncode != 0 and message in result.stderr, (message, result.stderr[-800:])
    # Nothing changed: the instance is still empty, so the real restore goes through.
    assert restore(to_recipient, "--identity", str(identity_file)).returncode == 0
    assert fresh_instance.answers()  # the restored instance answers
    again = restore(with_passphrase, passphrase=PASSPHRASE)
    assert again.returncode != 0 and "The database is not empty" in again.stderr
