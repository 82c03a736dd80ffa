"""Hardening (issue "Hardening"): throttled logins, rotation ends sessions, no 500 from input, private files,
the key redacted. Each test is named after the item it proves; DNS rebinding is `test_hosts.py`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import timezone

from elion.base.redaction import KeyRedactingFilter, redact_secret
from elion.models import LoginFailure
from memories.models import Memory
from tests.support.factories import thread
from transcript.models import Message

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"


@pytest.fixture
def protected(settings):
    settings.ELION_OWNER_PASSWORD = PASSWORD
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True
    return settings


def api_login(client: Client, password: str, address: str = "10.0.0.1"):
    return client.post(
        "/api/auth/login/", json.dumps({"password": password}), content_type="application/json", REMOTE_ADDR=address
    )


# --- Login throttling --------------------------------------------------------------------------


def test_login_throttling_five_failures_lock_the_address_out_even_for_the_right_password(protected):
    client = Client()
    for _ in range(5):
        assert api_login(client, "wrong").status_code == 401
    refused = api_login(client, PASSWORD)
    assert refused.status_code == 429
    assert refused.json()["error"] == "too_many_attempts"
    assert 0 < int(refused["Retry-After"]) <= 60
    # Another address is not locked out by this one's failures.
    assert api_login(Client(), PASSWORD, address="10.0.0.2").status_code == 200


def test_login_throttling_each_further_failure_doubles_the_lock(protected):
    client = Client()
    for _ in range(5):
        api_login(client, "wrong")
    row = LoginFailure.objects.get(key="client:10.0.0.1")
    first = row.locked_until - timezone.now()
    LoginFailure.objects.filter(pk=row.pk).update(locked_until=timezone.now() - timedelta(seconds=1))
    assert api_login(client, "wrong").status_code == 401  # tried after the lock ran out, wrong again
    second = LoginFailure.objects.get(pk=row.pk).locked_until - timezone.now()
    assert timedelta(seconds=50) < first <= timedelta(minutes=1)
    assert timedelta(seconds=110) < second <= timedelta(minutes=2)


def test_login_throttling_a_success_clears_the_address(protected):
    client = Client()
    for _ in range(4):
        api_login(client, "wrong")
    assert api_login(client, PASSWORD).status_code == 200
    assert not LoginFailure.objects.filter(key="client:10.0.0.1").exists()


def test_login_throttling_covers_the_login_page_too(protected):
    client = Client()
    for _ in range(5):
        assert client.post("/login/", {"password": "wrong"}, REMOTE_ADDR="10.0.0.3").status_code == 401
    page = client.post("/login/", {"password": PASSWORD}, REMOTE_ADDR="10.0.0.3")
    assert page.status_code == 429 and int(page["Retry-After"]) > 0


def test_login_throttling_overall_failures_lock_every_address(protected, monkeypatch):
    from elion.base import login_throttle

    monkeypatch.setattr(login_throttle, "OVERALL_THRESHOLD", 3)
    for index in range(3):
        api_login(Client(), "wrong", address=f"10.1.0.{index}")
    assert api_login(Client(), PASSWORD, address="10.1.0.99").status_code == 429


# --- Rotation ----------------------------------------------------------------------------------


def test_credential_rotation_a_new_password_ends_every_session(protected):
    client = Client()
    assert api_login(client, PASSWORD).status_code == 200
    assert client.get("/api/settings/").status_code == 200
    protected.ELION_OWNER_PASSWORD = "a brand new passphrase"
    assert client.get("/api/settings/").status_code == 401
    page = client.get("/")
    assert page.status_code == 302 and "/login/" in page["Location"]


def test_credential_rotation_a_new_api_token_ends_the_old_one(protected):
    assert Client().get("/api/settings/", HTTP_AUTHORIZATION="Bearer script-token").status_code == 200
    protected.ELION_API_TOKEN = "rotated-token"
    assert Client().get("/api/settings/", HTTP_AUTHORIZATION="Bearer script-token").status_code == 401
    assert Client().get("/api/settings/", HTTP_AUTHORIZATION="Bearer rotated-token").status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_credential_rotation_logout_closes_the_open_websocket(protected, monkeypatch):
    from conversations.web.messages import consumers
    from elion.asgi import application

    monkeypatch.setattr(consumers, "SESSION_CHECK_SECONDS", 0.1)
    client = Client()
    await sync_to_async(api_login)(client, PASSWORD)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    conversation = await sync_to_async(thread)()
    socket = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation.id}/",
        headers=[(b"host", b"127.0.0.1"), (b"origin", b"http://127.0.0.1"), (b"cookie", cookie)],
    )
    connected, _ = await socket.connect(timeout=5)
    assert connected
    await sync_to_async(client.post)("/logout/")
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4401}
    await asyncio.sleep(0)


# --- No 500 from input ---------------------------------------------------------------------------

NUL, SURROGATE = "a\x00b", "a\ud800b"


def raw_json(value: str) -> str:
    """A JSON body with `value` escaped the way a hostile client sends it (\\u0000, \\ud800)."""
    return json.dumps({"text": value})


@pytest.mark.parametrize("bad", [NUL, SURROGATE])
def test_no_500_nul_bytes_and_lone_surrogates_are_400_invalid_characters(bad):
    client = Client()
    response = client.post("/api/memories/", raw_json(bad), content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_characters" and "text" in response.json()["detail"]
    assert not Memory.objects.exists()
    conversation = thread()
    send = client.post(
        f"/api/conversations/{conversation.id}/messages/?stream=false",
        json.dumps({"content": bad}),
        content_type="application/json",
    )
    assert send.status_code == 400 and send.json()["error"] == "invalid_characters"
    assert not Message.objects.filter(conversation=conversation, role="user").exists()


def test_no_500_a_lone_surrogate_in_the_login_password_is_a_400(protected):
    response = Client().post(
        "/api/auth/login/", json.dumps({"password": SURROGATE}), content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["error"] == "invalid_characters"


@pytest.mark.parametrize("depth", [100, 100_000])
def test_no_500_json_nested_deeper_than_64_levels_is_json_too_deep(depth, protected):
    body = "[" * depth + "]" * depth
    for path in ("/api/auth/login/", "/api/memories/"):
        response = Client().post(path, body, content_type="application/json", HTTP_AUTHORIZATION="Bearer script-token")
        assert response.status_code == 400, path
        assert response.json()["error"] == "json_too_deep"


def test_no_500_nesting_up_to_64_levels_still_parses():
    from elion.base.input_checks import json_load_checked, json_too_deep

    assert json_load_checked("[" * 64 + "]" * 64) is not None
    assert json_too_deep('{"a": "' + "[" * 500 + '"}') is False  # brackets inside a string do not count


def test_no_500_nul_bytes_in_query_strings_and_page_forms():
    client = Client()
    api = client.get("/api/search/?q=a%00b")
    assert api.status_code == 400 and api.json()["error"] == "invalid_characters"
    page = client.post("/memories/", {"text": NUL, "category": "other", "importance": "3"})
    assert page.status_code == 400
    assert not Memory.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_no_500_a_deep_websocket_frame_is_answered_not_closed():
    from elion.asgi import application

    conversation = await sync_to_async(thread)()
    socket = WebsocketCommunicator(application, f"/ws/conversations/{conversation.id}/")
    connected, _ = await socket.connect(timeout=5)
    assert connected
    await socket.send_to(text_data="[" * 100_000 + "]" * 100_000)
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "error" and reply["error"] == "json_too_deep"
    await socket.send_to(text_data=json.dumps({"type": "send", "content": NUL}))
    reply = await socket.receive_json_from(timeout=5)
    assert reply["type"] == "error" and reply["error"] == "invalid_characters"
    await socket.disconnect()


@pytest.mark.parametrize(
    "conversation",
    [
        {"mapping": {"a": {"message": None, "parent": None}}, "current_node": ["a"]},
        {"mapping": {"a": {"message": None, "parent": {"x": 1}}}, "current_node": "a"},
        {
            "mapping": {"a": {"parent": None, "message": {"author": {"role": "user"}, "content": {"content_type": ["text"], "parts": ["hi"]}}}},
            "current_node": "a",
        },
        {"mapping": {"a": {"parent": None, "message": {"author": {"role": ["user"]}}}}, "current_node": "a", "id": {"x": 1}},
    ],
)
def test_no_500_the_chatgpt_parser_type_checks_every_field(conversation):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = json.dumps([conversation]).encode()
    response = Client().post("/api/archive/import/chatgpt/", {"file": SimpleUploadedFile("conversations.json", data)})
    assert response.status_code in (200, 400), response.content[:300]
    assert response["Content-Type"].startswith("application/json")


def test_no_500_an_unexpected_error_under_api_is_the_json_shape_logged_once(monkeypatch, caplog):
    from conversations.web.settings import api

    def broken():
        raise RuntimeError("a bug")

    monkeypatch.setattr(api, "assistant_settings_get", broken)
    with caplog.at_level(logging.ERROR):
        response = Client(raise_request_exception=False).get("/api/settings/")
    assert response.status_code == 500
    assert response.json()["error"] == "internal_error"
    assert len([r for r in caplog.records if "unexpected error" in r.getMessage()]) == 1


# --- Private files -------------------------------------------------------------------------------


def test_private_files_data_dir_database_and_secret_key(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    env = {**os.environ, "ELION_DATA_DIR": str(data), "DATABASE_URL": ""}
    env.pop("DJANGO_SECRET_KEY", None)
    env.pop("DATABASE_URL")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300)

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    assert mode(data) == 0o700
    assert mode(data / "secret_key") == 0o600
    assert mode(data / "elion.sqlite3") == 0o600
    for companion in ("elion.sqlite3-wal", "elion.sqlite3-shm"):
        if (data / companion).exists():
            assert mode(data / companion) == 0o600, companion


def test_private_files_blobs_are_readable_by_the_owner_only(settings, tmp_path):
    from transcript.attachments import store

    settings.ELION_ATTACHMENT_ROOT = str(tmp_path / "attachments")
    target = store.upload_store()
    store.write_bytes(target, b"blob", "a" * 64)
    assert stat.S_IMODE(store.blob_path(target, "a" * 64).stat().st_mode) == 0o400


# --- Redaction -----------------------------------------------------------------------------------

KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def test_key_redaction_any_eight_character_run_with_or_without_prefix():
    bare = KEY[len("sk-proj-") :]
    for leaked in (KEY, bare, bare[5:19], f"'{bare[:12]}'"):
        cleaned = redact_secret(f"Incorrect API key provided: {leaked}. See docs.", KEY)
        assert bare[:8] not in cleaned and leaked.strip("'") not in cleaned, cleaned
        assert "[redacted]" in cleaned
    assert redact_secret("nothing secret here", KEY) == "nothing secret here"
    assert redact_secret(f"{KEY[10:16]} is too short to be the key", KEY).startswith(KEY[10:16])


def test_key_redaction_in_logs(settings):
    settings.OPENAI_API_KEY = KEY
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "provider said %s", (KEY[8:30],), None)
    KeyRedactingFilter().filter(record)
    assert KEY[8:30] not in record.getMessage() and "[redacted]" in record.getMessage()


# --- Bounded memory for uploads -------------------------------------------------------------------


def _zip_bytes(name: str, data: bytes) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr(name, data)
    return buffer.getvalue()


def test_bounded_memory_a_zip_bomb_is_refused_by_its_compression_ratio():
    from django.core.files.uploadedfile import SimpleUploadedFile

    bomb = _zip_bytes("conversations.json", b"[" + b"{}," * 10_000_000 + b"{}]")  # ~29 KB → 30 MB
    assert len(bomb) < 64_000
    response = Client().post("/api/archive/import/chatgpt/", {"file": SimpleUploadedFile("export.zip", bomb)})
    assert response.status_code == 400 and response.json()["error"] == "zip_implausible_ratio"


def test_bounded_memory_an_export_is_read_one_conversation_at_a_time():
    """A file whose first items are no conversations stops the reading (it is not an export): the rest of
    a 30 MB file is never read, let alone built."""
    import io

    from archive.services.importers import export_reader
    from archive.services.importers.chatgpt import parse as chatgpt

    data = b"[" + b"{}," * 10_000_000 + b"{}]"
    source = io.BytesIO(data)
    limits = export_reader.ExportLimits(max_json_bytes=len(data) + 1, max_members=10)
    with export_reader.export_files(source, limits) as files, pytest.raises(chatgpt.MalformedExport):
        (name,) = files.json_names
        with files.open_json(name) as stream:
            list(chatgpt.parse_conversations(stream))
    assert source.tell() < len(data) // 10


# --- Content-Security-Policy ---------------------------------------------------------------------


def test_content_security_policy_on_every_html_page_and_no_inline_script_or_style():
    import re

    client = Client()
    for path in ("/", "/memories/", "/archive/", "/library/", "/settings/", "/characters/", f"/c/{thread().id}/"):
        response = client.get(path, follow=True)
        policy = response["Content-Security-Policy"]
        for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'",
                          "object-src 'none'"):
            assert directive in policy, (path, directive)
        html = response.content.decode()
        # No inline script (a json_script data block is not executed, so CSP allows it).
        assert not re.search(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", html), path
        assert "<style" not in html and ' style="' not in html, path
        assert not re.search(r"\son[a-z]+=\"", html), path  # no inline event handler
    assert "Content-Security-Policy" not in Client().get("/api/settings/")  # JSON answers need none


def test_no_500_a_zip_damaged_in_the_middle_of_its_member_is_a_400():
    import io
    import random
    import zipfile

    from django.core.files.uploadedfile import SimpleUploadedFile

    rng = random.Random(7)
    words = [" ".join(rng.choice(["lantern", "cedar", "tide", "harbour", "moss"]) for _ in range(2_000)) for _ in range(50)]
    data = json.dumps([{"title": w, "mapping": {}} for w in words]).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", data)
    damaged = bytearray(buffer.getvalue())
    middle = len(damaged) // 2
    damaged[middle : middle + 64] = bytes(64)  # inside the deflate stream, past what the first read sees
    response = Client().post(
        "/api/archive/import/chatgpt/", {"file": SimpleUploadedFile("export.zip", bytes(damaged))}
    )
    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"] in ("bad_zip", "malformed_chatgpt_export")
