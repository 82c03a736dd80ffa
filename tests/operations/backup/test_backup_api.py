"""`GET /api/backup/`: owner only, streamed (under WSGI and ASGI), statements flat in the number of rows."""

from __future__ import annotations

import io
import json
import os
import zipfile

import pytest
from django.db import connection
from django.test import AsyncClient, Client
from django.test.utils import CaptureQueriesContext

from operations.backup.writing import ROW_BATCH, backup_chunks
from tests.conftest import read_streaming
from tests.support.factories import thread, turns_append
from transcript.models import Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def protected(settings):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True


def zip_members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.testzip() is None
        return {name: archive.read(name) for name in archive.namelist()}


def long_thread(turns: int):
    conversation = thread()
    # Incompressible content, so the zip is megabytes and must come out in many chunks.
    turns_append(conversation, *[("user" if i % 2 == 0 else "assistant", os.urandom(1500).hex()) for i in range(turns)])
    return conversation


def test_backup_needs_the_owner_like_every_owner_endpoint(protected):
    thread(("user", "a secret about the lighthouse"))
    anonymous = Client().get("/api/backup/")
    assert anonymous.status_code == 401
    assert anonymous.json()["error"] == "authentication_required"
    wrong = Client().get("/api/backup/", HTTP_AUTHORIZATION="Bearer not-the-token")
    assert wrong.status_code == 401 and b"lighthouse" not in wrong.content
    owner = Client().get("/api/backup/", HTTP_AUTHORIZATION="Bearer script-token")
    assert owner.status_code == 200 and owner.streaming
    assert owner["Content-Disposition"].startswith('attachment; filename="elion-backup-') and owner["Content-Disposition"].endswith('-unencrypted.zip"')
    assert b"a secret about the lighthouse" in zip_members(b"".join(owner.streaming_content))[
        "models/transcript.message.jsonl"
    ]


def test_settings_page_links_to_the_backup_download():
    page = Client().get("/settings/").content.decode()
    assert 'href="/api/backup/" download>Download backup</a>' in page


def test_backup_is_streamed_in_chunks_with_every_row():
    conversation = long_thread(1_200)
    response = Client().get("/api/backup/")
    assert response.streaming
    chunks = list(response.streaming_content)
    total = sum(len(c) for c in chunks)
    assert total > 2_000_000 and len(chunks) > 1_200 // ROW_BATCH
    # One batch of rows (ROW_BATCH x 3 kB here) at most, never the whole zip, is held in any chunk.
    assert max(len(c) for c in chunks) < ROW_BATCH * 3_300
    rows = zip_members(b"".join(chunks))["models/transcript.message.jsonl"].decode().splitlines()
    assert len(rows) == Message.objects.filter(conversation=conversation).count()
    manifest = json.loads(zip_members(b"".join(chunks))["manifest.json"])
    assert {e["model"]: e["count"] for e in manifest["models"]}["transcript.message"] == len(rows)


def test_backup_statements_do_not_grow_with_rows():
    def statements() -> int:
        with CaptureQueriesContext(connection) as captured:
            for _ in backup_chunks(row_batch=50):
                pass
        return len(captured)

    long_thread(10)
    few = statements()
    long_thread(400)
    assert statements() == few


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_backup_over_asgi_is_an_asynchronous_stream_of_the_same_zip():
    from asgiref.sync import sync_to_async

    await sync_to_async(long_thread)(300)
    response = await AsyncClient().get("/api/backup/")
    assert response.status_code == 200 and response.streaming and response.is_async
    members = zip_members(await read_streaming(response))
    assert len(members["models/transcript.message.jsonl"].decode().splitlines()) == 300
