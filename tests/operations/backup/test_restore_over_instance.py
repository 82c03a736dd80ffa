"""`POST /api/backups/{id}/restore/` and `GET /api/restores/{id}/` (issue 42): a stored backup restored over a lived-in
instance after a typed confirmation, as a django-q2 job, through the service of `manage.py restore --replace`.

A missing or wrong confirmation, a wrong key, a tampered, truncated or newer-schema file are answered 4xx before
anything changes (no run recorded, nothing queued, the rows as they were); the right word restores, with a
verified backup of the state before, and the owner's session still works afterwards."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pyrage
import pytest
from django.core.management import call_command
from django.test import Client
from django_q.models import OrmQ

from elion.models import BackupRecord, RestoreRun
from operations.backup import encryption, members
from tests.support.backup_files import backup_file, members_of, rewritten
from tests.support.factories import api_call, thread
from tests.support.queue_cluster import QueueCluster
from tests.support.stored_backups import stored
from transcript.attachments import store
from transcript.models import Conversation, Message


def restore(client: Client, record: BackupRecord, **body):
    return client.post(f"/api/backups/{record.id}/restore/", body, content_type="application/json")


def refused(response, status: int, code: str, words: str) -> None:
    assert response.status_code == status, response.content
    assert response.json()["error"] == code and words in response.json()["detail"], response.json()


@pytest.mark.django_db(transaction=True)
def test_a_missing_or_wrong_confirmation_and_every_bad_file_are_refused_before_anything_changes(backup_env, tmp_path):
    thread(("user", "the ferry at dawn"), ("assistant", "the keeper waves"), title="Harbour")
    plain = backup_file(tmp_path)
    client = Client()
    good = stored(plain)
    queued = OrmQ.objects.count()

    refused(restore(client, good), 400, "confirmation_required", "Type the word replace")
    refused(restore(client, good, confirm="  "), 400, "confirmation_required", "Type the word replace")
    refused(restore(client, good, confirm="yes"), 400, "confirmation_mismatch", "must be the word replace")
    refused(restore(client, good, confirm=["replace"]), 400, "confirmation_required", "Type the word replace")
    not_json = client.post(f"/api/backups/{good.id}/restore/", "[1]", content_type="application/json")
    refused(not_json, 400, "malformed_request", "JSON object")
    missing = BackupRecord(id="00000000-0000-4000-8000-000000000000")
    refused(restore(client, missing, confirm="replace"), 404, "backup_not_found", "No such backup")

    # Tampered at the destination: a byte of the stored file flipped.
    destination_file = Path(backup_env["ELION_BACKUP_DIR"]) / good.key
    data = bytearray(destination_file.read_bytes())
    data[len(data) // 2] ^= 0x01
    tampered = stored(plain)
    (Path(backup_env["ELION_BACKUP_DIR"]) / tampered.key).write_bytes(bytes(data))
    refused(restore(client, tampered, confirm="replace"), 409, "backup_refused", "it was altered")
    # Truncated (its recorded sha256 that of the cut file, so the decryption is what finds it). Cut from its own
    # file: age's header holds a random-length grease stanza, so two encryptions of one zip differ in length.
    truncated = stored(plain)
    truncated_file = Path(backup_env["ELION_BACKUP_DIR"]) / truncated.key
    cut = truncated_file.read_bytes()[:-100]
    truncated_file.write_bytes(cut)
    BackupRecord.objects.filter(pk=truncated.pk).update(sha256=hashlib.sha256(cut).hexdigest())
    refused(restore(client, truncated, confirm="replace"), 409, "backup_refused", "truncated or altered")
    # Another passphrase than this server's.
    foreign = stored(plain, encryption.BackupKeys(passphrase="another lamp"))
    refused(restore(client, foreign, confirm="replace"), 409, "backup_refused", "passphrase does not open")
    # Encrypted to an age recipient: no identity, a wrong one, and text that is none.
    identity = pyrage.x25519.Identity.generate()
    to_key = stored(plain, encryption.BackupKeys(recipients=(str(identity.to_public()),)))
    refused(restore(client, to_key, confirm="replace"), 409, "backup_refused", "give the matching identity")
    other = str(pyrage.x25519.Identity.generate())
    refused(restore(client, to_key, confirm="replace", identity=other), 409, "backup_refused", "cannot be decrypted")
    refused(restore(client, to_key, confirm="replace", identity="not a key"), 400, "invalid_identity", "no age identity")
    # Made by a newer version: its manifest names a migration this database lacks.
    parts = members_of(plain)
    manifest = json.loads(parts["manifest.json"])
    manifest["migrations"]["conversations"].append("9999_from_the_future")
    newer = stored(rewritten(plain, {**parts, "manifest.json": json.dumps(manifest).encode()}, reseal=True))
    refused(restore(client, newer, confirm="replace"), 409, "backup_refused", "made by a newer version of Elion")

    assert RestoreRun.objects.count() == 0 and OrmQ.objects.count() == queued, "nothing recorded, nothing queued"
    assert list(Conversation.objects.values_list("title", flat=True)) == ["Harbour"]
    assert not list(Path(backup_env["ELION_BACKUP_STAGING_DIR"]).iterdir()), "no opened backup left behind"
    # The right word with the identity that opens it: accepted (queued; no cluster runs it here).
    accepted = restore(client, to_key, confirm=" REPLACE ", identity=f"# created: now\n{identity}\n")
    assert accepted.status_code == 202, accepted.content
    assert accepted.json()["status"] == "queued" and "1 conversation, 2 messages" in accepted.json()["backup_holds"]
    assert OrmQ.objects.count() == queued + 1
    refused(restore(client, good, confirm="replace"), 409, "restore_running", "already under way")
    assert api_call(client, "get", f"/api/restores/{accepted.json()['id']}/")["status"] == "queued"
    refused(client.get("/api/restores/00000000-0000-4000-8000-000000000000/"), 404, "restore_not_found", "No such")


def wait_for_run(cluster: QueueCluster, client: Client, run_id: str, deadline: float) -> dict:
    seen = []
    while time.monotonic() < deadline:
        assert cluster.process.poll() is None, cluster.log()[-3000:]
        run = api_call(client, "get", f"/api/restores/{run_id}/")
        if not seen or seen[-1] != run["step"]:
            seen.append(run["step"])
        if run["status"] in ("done", "failed"):
            return {**run, "seen": seen}
        time.sleep(0.3)
    raise AssertionError(cluster.log()[-3000:])


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.django_db(transaction=True)
def test_the_right_word_restores_over_a_lived_in_instance_in_a_job_and_the_session_still_works(backup_env, tmp_path, settings):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_PROTECTED = True
    new = thread(("user", "the lighthouse at dusk"), ("assistant", "the lamp is lit"), ("user", "and the fog?"),
                 ("assistant", "a horn sounds"), title="Lighthouse")
    new_blob = b"the lighthouse log " * 50
    store.write_bytes(store.conversation_store(new.pk), new_blob, hashlib.sha256(new_blob).hexdigest())
    new_backup = backup_file(tmp_path, "new.zip")
    call_command("flush", interactive=False, verbosity=0)
    for path in Path(backup_env["ELION_ATTACHMENT_ROOT"]).rglob("*"):
        if path.is_file():
            path.unlink()
    record = stored(new_backup)
    old = thread(("user", "the ferry at dawn"), ("assistant", "the keeper waves"), title="Harbour")
    old_blob = b"the harbour timetable " * 50
    store.write_bytes(store.conversation_store(old.pk), old_blob, hashlib.sha256(old_blob).hexdigest())

    client = Client()
    assert client.post("/api/auth/login/", {"password": "correct horse"}, content_type="application/json").status_code == 200
    accepted = restore(client, record, confirm="replace")
    assert accepted.status_code == 202, accepted.content
    run_id = accepted.json()["id"]
    assert list(Conversation.objects.values_list("title", flat=True)) == ["Harbour"], "nothing changes before the job"

    cluster = QueueCluster(backup_env).start()
    try:
        run = wait_for_run(cluster, client, run_id, time.monotonic() + 600)
    finally:
        cluster.stop()
    assert run["status"] == "done", (run, cluster.log()[-3000:])
    assert run["restored"]["rows"]["transcript.message"] == 4 and run["restored"]["blobs"] == 1
    assert run["restored_words"].startswith("1 conversation, 4 messages") and "1 attached file" in run["restored_words"]
    assert "transcript.message" not in run["restored_words"]
    assert run["source"].startswith("the backup made ") and run["detail"] is None
    assert list(Conversation.objects.values_list("title", flat=True)) == ["Lighthouse"]
    assert Message.objects.filter(content="a horn sounds").exists()
    assert not Message.objects.filter(content="the keeper waves").exists()
    blobs = sorted(path.read_bytes() for _, _, path in members.stored_blobs())
    assert blobs == [new_blob], "the old instance's blob is removed, the backup's placed"
    # The state before was backed up and verified, and kept.
    assert Path(run["safety_backup"]).is_file()
    assert b"the keeper waves" in members_of(Path(run["safety_backup"]))["models/transcript.message.jsonl"]
    # Users and sessions are not in a backup: the owner's session goes on working.
    assert client.get("/api/backups/").status_code == 200
    assert client.get("/settings/backups/").status_code == 200
    assert not list(Path(backup_env["ELION_BACKUP_STAGING_DIR"]).glob("restore-*.zip")), "the opened backup is removed"
    # The job ran once: a second delivery of the same task finds the run claimed.
    from operations.backup.restore_requests import restore_run_perform

    assert restore_run_perform(run_id) == "done"


@pytest.mark.django_db(transaction=True)
def test_hostile_confirm_and_identity_values_get_a_4xx_in_the_error_shape(backup_env, tmp_path):
    thread(("user", "the ferry at dawn"), ("assistant", "the keeper waves"), title="Harbour")
    record = stored(backup_file(tmp_path))
    client = Client(raise_request_exception=False)
    values = ["a\x00b", "a\ud800b", ["replace"], {"nested": "replace"}, None, True, 10**40, -(2**63), 1e308, "x" * 100_000]
    for value in values:
        bodies = [{"confirm": value}] + ([{"confirm": "replace", "identity": value}] if value is not None else [])
        for body in bodies:  # (a null identity is no identity: the passphrase opens this backup)
            response = client.post(f"/api/backups/{record.id}/restore/", json.dumps(body), content_type="application/json")
            assert 400 <= response.status_code < 500, (body, response.status_code)
            assert set(response.json()) == {"error", "detail"}, response.json()
    for path in ("/api/backups/not-a-uuid/restore/", "/api/restores/not-a-uuid/"):
        assert client.post(path, "{}", content_type="application/json").status_code == 404
    assert RestoreRun.objects.count() == 0 and list(Conversation.objects.values_list("title", flat=True)) == ["Harbour"]
