"""Settings → Restore a backup (issues 34, 42): upload, a dry-run check with counts, then a confirmation; the rules of
`manage.py restore` — a damaged zip is refused, nothing merges — and a confirmed restore into an empty instance puts
every row back; over an instance in use, only the typed word replace starts the replacement, as a queued job."""

from __future__ import annotations

import re
import shutil

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django_q.models import OrmQ

from elion.models import RestoreRun
from operations.backup.writing import backup_chunks
from tests.support.factories import thread
from transcript.models import Conversation, Message

pytestmark = pytest.mark.django_db(transaction=True)


def backup_bytes() -> bytes:
    return b"".join(backup_chunks())


def upload(client: Client, data: bytes):
    return client.post("/settings/restore/", {"file": SimpleUploadedFile("backup.zip", data, "application/zip")})


def test_restore_from_settings_checks_counts_then_restores_into_an_empty_instance(attachment_root, settings, tmp_path):
    settings.ELION_BACKUP_STAGING_DIR = tmp_path / "staging"
    thread(("user", "the ferry at dawn"), ("assistant", "the keeper waves"), title="Harbour")
    thread(("user", "tides"), ("assistant", "at seven"), title="Tides")
    data = backup_bytes()
    client = Client()

    lived_in = upload(client, data)
    assert lived_in.status_code == 200
    text = lived_in.content.decode()
    assert "This instance is in use: it holds 2 conversations, 4 messages" in text
    assert "it holds 2 conversations, 4 messages" in text and "replaces all of it" in text
    assert "To confirm, type the word replace" in text and "data-restore-replace" in text
    assert "transcript.conversation" not in text and "data-restore-confirm" not in text
    token = re.search(r'action="/settings/restore/([0-9a-f]{32})/"', text).group(1)
    missing = client.post(f"/settings/restore/{token}/")
    assert missing.status_code == 400 and "Type the word replace" in missing.content.decode()
    wrong = client.post(f"/settings/restore/{token}/", {"confirm": "restore"})
    assert wrong.status_code == 400 and "must be the word replace" in wrong.content.decode()
    assert "data-restore-replace" in wrong.content.decode(), "the upload waits for another try"
    assert Conversation.objects.count() == 2 and RestoreRun.objects.count() == 0
    queued = OrmQ.objects.count()
    started = client.post(f"/settings/restore/{token}/", {"confirm": "Replace"})
    run = RestoreRun.objects.get()
    assert started.status_code == 302 and started["Location"] == f"/settings/restores/{run.id}/"
    assert run.status == "queued" and run.source.startswith("the uploaded backup made ")
    assert OrmQ.objects.count() == queued + 1, "the replacement is a job"
    progress = client.get(started["Location"]).content.decode()
    assert "which holds 2 conversations, 4 messages" in progress and "Waiting for the background queue" in progress
    assert f'data-restore-url="/api/restores/{run.id}/"' in progress, "the page follows the run's own status"
    assert Conversation.objects.count() == 2, "nothing changes until the job runs"

    call_command("flush", interactive=False, verbosity=0)
    shutil.rmtree(attachment_root, ignore_errors=True)
    checked = upload(client, data)
    page = checked.content.decode()
    assert checked.status_code == 200 and "The backup checks out" in page
    assert "This instance is fresh" in page and "it holds 2 conversations, 4 messages" in page
    assert "transcript.conversation" not in page
    assert Conversation.objects.count() == 0, "the check writes nothing"
    token = re.search(r'action="/settings/restore/([0-9a-f]{32})/"', page).group(1)

    done = client.post(f"/settings/restore/{token}/")
    assert done.status_code == 302 and done["Location"] == "/"
    assert sorted(Conversation.objects.values_list("title", flat=True)) == ["Harbour", "Tides"]
    assert Message.objects.filter(content="the keeper waves").exists()
    again = client.post(f"/settings/restore/{token}/")
    assert again.status_code == 404, "an upload is used once"


def test_a_damaged_or_foreign_zip_is_refused_and_nothing_changes(attachment_root):
    call_command("flush", interactive=False, verbosity=0)
    client = Client()
    refused = upload(client, b"not a zip at all")
    assert refused.status_code == 409 and "is not a readable backup zip" in refused.content.decode()
    missing = client.post("/settings/restore/", {})
    assert missing.status_code == 400
    assert client.post("/settings/restore/" + "0" * 32 + "/").status_code == 404
    assert client.post("/settings/restore/not-a-token/").status_code == 404
    assert client.get("/settings/restore/").status_code == 200
    assert Conversation.objects.count() == 0
