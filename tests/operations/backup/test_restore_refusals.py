"""A restore writes nothing unless the backup checks out and the database and data dir are empty."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from operations.backup.restoring import BackupRefused, backup_restore
from tests.operations.backup.conftest import build_rich_instance
from tests.support.backup_files import backup_file, members_of, rewritten
from tests.support.factories import thread
from transcript.attachments import store
from transcript.models import Conversation, Message

# Sends run their reply in another thread: the rows must be committed.
pytestmark = pytest.mark.django_db(transaction=True)


def first_blob(members: dict[str, bytes]) -> str:
    return next(name for name in members if name.startswith("blobs/conversations/"))


@pytest.fixture
def rich_backup(scripted_provider, client, tmp_path) -> Path:
    build_rich_instance(client, scripted_provider)
    return backup_file(tmp_path)


def test_restore_into_a_database_that_holds_rows_is_refused_and_changes_nothing(rich_backup):
    before = Message.objects.count()
    with pytest.raises(CommandError, match="Restore refused: The database is not empty"):
        call_command("restore", str(rich_backup))
    assert Message.objects.count() == before


def test_a_blob_changed_inside_the_backup_is_refused(rich_backup):
    members = members_of(rich_backup)
    name = first_blob(members)
    tampered = rewritten(rich_backup, {**members, name: members[name] + b"!"})
    with pytest.raises(BackupRefused, match=f"{name} does not match the sha256 and size in the manifest"):
        backup_restore(tampered)


def test_a_blob_changed_with_its_manifest_entry_is_refused_by_its_name(rich_backup):
    members = members_of(rich_backup)
    name = first_blob(members)
    data = members[name] + b"!"
    manifest = json.loads(members["manifest.json"])
    manifest["members"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    tampered = rewritten(rich_backup, {**members, name: data, "manifest.json": json.dumps(manifest).encode()}, reseal=True)
    with pytest.raises(BackupRefused, match=f"The blob {name} does not hash to its name"):
        backup_restore(tampered)


def test_a_changed_manifest_is_refused(rich_backup):
    members = members_of(rich_backup)
    manifest = json.loads(members["manifest.json"])
    manifest["models"][0]["count"] += 1
    tampered = rewritten(rich_backup, {**members, "manifest.json": json.dumps(manifest).encode()})
    with pytest.raises(BackupRefused, match=r"manifest does not match its sha256"):
        backup_restore(tampered)


def test_a_member_missing_from_the_backup_is_refused(rich_backup):
    members = members_of(rich_backup)
    del members[first_blob(members)]
    with pytest.raises(BackupRefused, match="members differ from its manifest"):
        backup_restore(rewritten(rich_backup, members))


def test_a_file_that_is_no_backup_is_refused(tmp_path):
    path = tmp_path / "not-a-backup.zip"
    path.write_bytes(b"plain text")
    with pytest.raises(BackupRefused, match="not a readable backup zip"):
        backup_restore(path)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", "[]")
    with pytest.raises(BackupRefused, match="has no manifest.json"):
        backup_restore(path)


def test_fresh_instance_refuses_a_row_count_that_differs_then_restores_once_and_refuses_twice(
    scripted_provider, client, tmp_path, fresh_instance
):
    build_rich_instance(client, scripted_provider)
    path = backup_file(tmp_path)
    members = members_of(path)
    manifest = json.loads(members["manifest.json"])
    entry = next(e for e in manifest["models"] if e["model"] == "transcript.message")
    entry["count"] += 1
    miscounted = rewritten(path, {**members, "manifest.json": json.dumps(manifest).encode()}, reseal=True)

    refused = fresh_instance.restore(miscounted)
    assert refused.returncode != 0
    assert f"models/transcript.message.jsonl holds {entry['count'] - 1} rows; the manifest says" in refused.stderr
    restored_root = fresh_instance.data_dir / "attachments"
    assert not [p for p in restored_root.rglob("*") if p.is_file() and p.parent.name != "tmp"], "blobs left behind"

    assert fresh_instance.restore(path).returncode == 0  # the refused attempt left the instance empty
    again = fresh_instance.restore(path)
    assert again.returncode != 0 and "The database is not empty" in again.stderr


def test_fresh_database_with_blobs_in_its_data_dir_is_refused(tmp_path, fresh_instance):
    thread(("user", "hello"), ("assistant", "hi"))
    path = backup_file(tmp_path)
    data = b"a stray blob"
    sha256 = hashlib.sha256(data).hexdigest()
    store.write_bytes(fresh_instance.data_dir / "attachments" / "uploads", data, sha256)
    refused = fresh_instance.restore(path)
    assert refused.returncode != 0 and "The data dir is not empty" in refused.stderr


def test_backup_command_writes_the_zip_and_never_overwrites(tmp_path):
    conversation = thread(("user", "the ferry"), ("assistant", "at dawn"))
    target = tmp_path / "out.zip"
    out = io.StringIO()
    call_command("backup", output=str(target), stdout=out)
    assert "Backup written to" in out.getvalue()
    with zipfile.ZipFile(target) as archive:
        rows = archive.read("models/transcript.message.jsonl").decode().splitlines()
    assert {json.loads(line)["fields"]["content"] for line in rows} >= {"the ferry", "at dawn"}
    assert {json.loads(line)["fields"]["conversation"] for line in rows} == {str(conversation.id)}
    with pytest.raises(CommandError, match="already exists"):
        call_command("backup", output=str(target))
    assert not list(tmp_path.glob("*.partial"))


def test_conversation_rows_are_counted_in_the_manifest(tmp_path):
    thread(("user", "one"), ("assistant", "two"))
    manifest = json.loads(members_of(backup_file(tmp_path))["manifest.json"])
    counts = {e["model"]: e["count"] for e in manifest["models"]}
    assert counts["transcript.conversation"] == Conversation.all_objects.count() == 1
    assert counts["transcript.message"] == Message.objects.count()


def test_a_blob_already_damaged_on_disk_is_kept_listed_and_never_counted_as_tampering(scripted_provider, client, tmp_path):
    ids = build_rich_instance(client, scripted_provider)
    sha256, blob = next(store.blobs_in(store.conversation_store(ids["main"])))
    blob.chmod(0o600)
    blob.write_bytes(blob.read_bytes() + b"rot")
    path = backup_file(tmp_path)
    manifest = json.loads(members_of(path)["manifest.json"])
    name = f"blobs/conversations/{ids['main']}/{sha256}"
    assert manifest["damaged_blobs"] == [name]
    assert manifest["members"][name]["sha256"] != sha256
    # The backup itself checks out (only the target, which holds rows, is refused).
    with pytest.raises(BackupRefused, match="The database is not empty"):
        backup_restore(path)


def test_fresh_instance_restores_everything_but_a_blob_damaged_before_the_backup(
    scripted_provider, client, tmp_path, fresh_instance
):
    ids = build_rich_instance(client, scripted_provider)
    sha256, blob = next(store.blobs_in(store.conversation_store(ids["main"])))
    blob.chmod(0o600)
    blob.write_bytes(b"rot")
    path = backup_file(tmp_path)
    result = fresh_instance.restore(path)
    assert result.returncode == 0, result.stderr
    name = f"blobs/conversations/{ids['main']}/{sha256}"
    assert f"not restored (damaged before the backup was made): {name}" in result.stdout
    restored = fresh_instance.data_dir / "attachments" / "conversations" / ids["main"]
    placed = {p.name for p in restored.rglob("*") if p.is_file()}
    assert sha256 not in placed and placed == {
        s for s, _ in store.blobs_in(store.conversation_store(ids["main"]))
    } - {sha256}
