"""A rich instance built through the API, its backup, and fresh instances (database + data dir) to restore into."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.utils import timezone

from continuity.models import ThreadHandoff
from tests.archive import chatgpt_export
from tests.archive.conftest import make_zip, minimal_pdf
from tests.support.attachment_files import png_bytes
from tests.support.factories import api_call

ROOT = Path(__file__).resolve().parents[3]
NOTES = b"# Harbour notes\n\nThe ferry leaves at dawn; the lighthouse keeper waves.\n"


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path) -> Path:
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    return settings.ELION_ATTACHMENT_ROOT


def send(client: Client, provider, conversation_id: str, content: str, reply: str, **extra) -> dict:
    provider.script({"text": reply})
    return api_call(
        client, "post", f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content, **extra}
    )


def new_chat(client: Client, **body) -> str:
    return api_call(client, "post", "/api/conversations/", {"persona": "elion", **body}, status=201)["id"]


def upload(client: Client, name: str, data: bytes) -> dict:
    response = client.post("/api/attachments/", {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == 201, response.content
    return response.json()


def build_rich_instance(client: Client, provider) -> dict:
    """Branches (retry and edit), attachments with real blobs, memories edited and deleted, a hidden folder, a
    shield, a trashed chat, handoffs through New chat and Branch, a compaction, archive, Library, a character."""
    api_call(client, "patch", "/api/settings/", {"custom_instructions": "Speak of the lighthouse plainly."})
    journal = api_call(client, "post", "/api/memories/", {"text": "AUMA keeps a lighthouse journal."}, status=201)
    ferry = api_call(client, "post", "/api/memories/", {"text": "AUMA takes the dawn ferry."}, status=201)
    cat = api_call(client, "post", "/api/memories/", {"text": "Marigold is AUMA's cat."}, status=201)
    api_call(client, "post", "/api/characters/", {"name": "Harbour keeper", "description": "Keeps the harbour."}, 201)

    main = new_chat(client, title="Lighthouse")
    first = send(client, provider, main, "Tell me about the lighthouse.", "It stands on the harbour rock.")
    second = send(client, provider, main, "And the harbour at night?", "Quiet, with one lamp.")
    provider.script({"text": "Dark water and one lamp."})
    api_call(client, "post", f"/api/conversations/{main}/messages/{second['assistant_message']['id']}/retry/?stream=false")
    send(client, provider, main, "What about the ferry?", "It leaves at dawn.", parent_id=first["assistant_message"]["id"])
    image, notes = upload(client, "photo.png", png_bytes()), upload(client, "notes.md", NOTES)
    report = upload(client, "report.pdf", minimal_pdf("Harbour figures rose"))
    send(client, provider, main, "Look at these notes.", "The notes mention the ferry.",
         attachment_ids=[image["id"], notes["id"], report["id"]])
    upload(client, "draft.md", b"# A draft never sent\n")  # stays in the upload store

    api_call(client, "patch", f"/api/memories/{journal['id']}/", {"text": "AUMA keeps a lighthouse journal in ink."})
    api_call(client, "delete", f"/api/memories/{cat['id']}/", status=204)

    handed = new_chat(client)  # New chat: the lighthouse chat's final turns become its handoff
    send(client, provider, handed, "Carry on about the harbour.", "The harbour is calm.")
    api_call(client, "post", f"/api/conversations/{handed}/refresh-memory/")
    response = client.post(f"/api/conversations/{main}/branch/", HTTP_IDEMPOTENCY_KEY="branch-1")
    assert response.status_code == 201, response.content

    letters = api_call(client, "post", "/api/folders/", {"name": "Letters"}, status=201)
    hidden = new_chat(client, title="Marigold letters", folder_id=letters["id"])
    send(client, provider, hidden, "A letter about marigold.", "Marigold sleeps by the lamp.")
    api_call(client, "patch", f"/api/folders/{letters['id']}/", {"hidden": True})
    quiet = api_call(client, "post", "/api/folders/", {"name": "Quiet"}, status=201)
    shielded = new_chat(client, title="Shielded", folder_id=quiet["id"])
    send(client, provider, shielded, "The lighthouse log.", "Logged at dusk.")
    api_call(client, "patch", f"/api/folders/{quiet['id']}/", {"hidden": True})
    api_call(client, "patch", f"/api/folders/{quiet['id']}/", {"hidden": False})
    trashed = new_chat(client, title="Trashed")
    send(client, provider, trashed, "Throw away the ferry timetable.", "Done.")
    api_call(client, "post", f"/api/conversations/{trashed}/trash/")

    provider.script({"text": "AUMA asked about the lighthouse, harbour, ferry and notes."})
    api_call(client, "post", f"/api/conversations/{main}/compaction/", status=201)

    api_call(client, "post", "/api/archive/documents/", {
        "title": "Harbour letters", "collection": "conversations",
        "text": "AUMA: Is the lighthouse lit?\nVoicefire 5.1: Every night, over the harbour.\n",
    }, status=201)
    api_call(client, "post", "/api/library/files/", {"name": "ferry.md", "text": "# Ferry\n\nDawn sailings only."}, 201)
    # A ChatGPT export with branches and images (the archive's own blob store).
    chatgpt = make_zip({"conversations.json": chatgpt_export.as_json(chatgpt_export.conversations()),
                        **chatgpt_export.images()})
    imported = client.post("/api/archive/import/chatgpt/", {"file": SimpleUploadedFile("export.zip", chatgpt)})
    assert imported.status_code == 200 and imported.json()["conversations"] >= 1, imported.content
    # An artifact the model wrote with its tool, and a private chat.
    poems = new_chat(client, title="Poems")
    provider.script(
        {"tool_calls": [{"name": "create_artifact", "call_id": "call_poem",
                         "arguments": {"title": "Harbour lamp", "kind": "poem", "content": "The lamp keeps time."}}]},
        {"text": "I wrote you a poem."},
    )
    api_call(client, "post", f"/api/conversations/{poems}/messages/?stream=false", {"content": "Write me a poem."})
    private = new_chat(client, private=True)
    send(client, provider, private, "Between us only.", "Between us.")
    # Retired generated-summary columns (never written by the app today): a backup carries them all the same.
    ThreadHandoff.objects.filter(destination_id=handed).update(
        summary="retired summary", recent_raw="retired raw", updated_at=timezone.now()
    )
    return {"main": main, "hidden": hidden, "shielded": shielded, "trashed": trashed, "ferry": ferry["id"]}


def backup_bytes(client: Client) -> bytes:
    response = client.get("/api/backup/")
    assert response.status_code == 200, response.content
    assert response.streaming and response["Content-Type"] == "application/zip"
    return b"".join(response.streaming_content)


def manifest_of(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return json.loads(archive.read("manifest.json"))


class FreshInstance:
    """An empty, migrated database and an empty data dir, driven through `manage.py` subprocesses."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.env = env

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300
        )
        if check:
            assert result.returncode == 0, (args, result.stdout[-2000:], result.stderr[-4000:])
        return result

    def restore(self, path: Path) -> subprocess.CompletedProcess:
        return self.manage("restore", str(path), check=False)

    def answers(self) -> dict:
        out = self.data_dir / "answers.json"
        self.manage(
            "shell", "-c", f"from tests.support.instance_answers import instance_answers_dump; instance_answers_dump({str(out)!r})"
        )
        return json.loads(out.read_text())


def _provider_env() -> dict[str, str]:
    return {
        "OPENAI_API_KEY": django_settings.OPENAI_API_KEY or "",
        "OPENAI_BASE_URL": django_settings.OPENAI_BASE_URL or "",
        "ELION_API_SELECTOR": django_settings.ELION_API_SELECTOR,
        "ELION_MODEL": django_settings.ELION_MODEL,
        "ELION_PROVIDER_ID": django_settings.ELION_PROVIDER_ID,
    }


def _fresh_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ELION_ATTACHMENT_ROOT", "ELION_SQLITE_PATH", "DATABASE_URL")}
    env.update(_provider_env(), ELION_DATA_DIR=str(data_dir))
    return env


def _database_url(name: str) -> str:
    return urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def migrated_template(django_db_setup, django_db_blocker, tmp_path_factory):
    """One empty database, migrated by `manage.py migrate` once per session, that every fresh instance is a
    copy of (PostgreSQL: the template of its CREATE DATABASE; SQLite: the file). A copy of a migrated empty
    database is the database a migrate would make, without a migrate's seconds each time."""
    data_dir = tmp_path_factory.mktemp("migrated-template")
    env = _fresh_env(data_dir)
    with django_db_blocker.unblock():
        name = None
        if connection.vendor == "postgresql":
            name = f"elion_template_{uuid.uuid4().hex[:12]}"
            with connection.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{name}"')
            env["DATABASE_URL"] = _database_url(name)
        FreshInstance(data_dir, env).manage("migrate", "--noinput")
        sqlite_file = data_dir / "elion.sqlite3"
        # The migrate process closed its database: nothing of it is left in a write-ahead log.
        assert name is not None or (sqlite_file.exists() and not sqlite_file.with_name("elion.sqlite3-wal").exists())
        yield name or sqlite_file
        if name is not None:
            with connection.cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')


@pytest.fixture
def fresh_instance(tmp_path, scripted_provider, migrated_template):
    """A new database on the same server (PostgreSQL: CREATE DATABASE from the migrated template; SQLite: a copy
    of the migrated file) and an empty data dir."""
    data_dir = tmp_path / "restored"
    data_dir.mkdir()
    env = _fresh_env(data_dir)
    name = None
    if connection.vendor == "postgresql":
        name = f"elion_restore_{uuid.uuid4().hex[:12]}"
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}" TEMPLATE "{migrated_template}"')
        env["DATABASE_URL"] = _database_url(name)
    else:
        shutil.copyfile(migrated_template, data_dir / "elion.sqlite3")
    yield FreshInstance(data_dir, env)
    if name is not None:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}"')
