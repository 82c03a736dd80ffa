"""Attachments: upload, send, projection into both API selectors, verification, bad input.

Every send here goes through the real HTTP API, the real openai SDK and the
scripted OpenAI-compatible server, whose recorded request is asserted.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient

from tests.archive.conftest import minimal_pdf
from tests.conftest import parse_sse, read_streaming
from tests.support.attachment_files import png_bytes
from tests.support.scripted_provider import ScriptedReply
from tests.support.sending import create_conversation, messages_of, send_sse
from transcript.attachments import store as attachment_store
from transcript.models import Attachment, Message, MessageAttachment, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

MARKDOWN = b"# Notes\n\nThe launch moved to Thursday.\n"


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path) -> Path:
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    return settings.ELION_ATTACHMENT_ROOT


async def upload(client: AsyncClient, name: str, data: bytes, **fields) -> dict:
    response = await client.post("/api/attachments/", {"file": SimpleUploadedFile(name, data), **fields})
    assert response.status_code == 201, response.content
    return response.json()


async def send_json(client: AsyncClient, conversation_id: str, **body):
    return await client.post(f"/api/conversations/{conversation_id}/messages/", body, content_type="application/json")


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def last_user_content(body: dict):
    items = body.get("input") or body.get("messages")
    return [item for item in items if item.get("role") == "user"][-1]["content"]


def conversation_blob(conversation_id: str, sha256: str) -> Path:
    return attachment_store.blob_path(attachment_store.conversation_store(conversation_id), sha256)


@sync_to_async
def user_turn_count(conversation_id: str) -> int:
    return Message.objects.filter(conversation_id=conversation_id, role=Role.USER).count()


@pytest.mark.parametrize("selector", ["responses", "chat.completions"])
async def test_images_and_files_reach_the_model_as_image_inputs_and_text(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    image = await upload(client, "photo.png", png_bytes())
    notes = await upload(client, "notes.md", MARKDOWN)
    report = await upload(client, "report.pdf", minimal_pdf("Quarterly figures rose"))
    assert (image["mime"], notes["mime"], report["mime"]) == ("image/png", "text/markdown", "application/pdf")

    events = await send_sse(
        client, conversation_id, content="What do you see?", attachment_ids=[image["id"], notes["id"], report["id"]]
    )
    assert events[-1][1]["status"] == "complete"

    content = last_user_content(scripted_provider.last_request().body)
    notes_text = "[Attached file “notes.md” (text/markdown)]\n" + MARKDOWN.decode()
    report_text = "[Attached file “report.pdf” (application/pdf)]\nQuarterly figures rose"
    if selector == "responses":
        assert content == [
            {"type": "input_text", "text": "What do you see?"},
            # `detail` is required by the SDK's `ResponseInputImageParam` (ELION_IMAGE_DETAIL, "auto" by default).
            {"type": "input_image", "image_url": data_url("image/png", png_bytes()), "detail": "auto"},
            {"type": "input_text", "text": notes_text},
            {"type": "input_text", "text": report_text},
        ]
    else:
        assert content == [
            {"type": "text", "text": "What do you see?"},
            {"type": "image_url", "image_url": {"url": data_url("image/png", png_bytes()), "detail": "auto"}},
            {"type": "text", "text": notes_text},
            {"type": "text", "text": report_text},
        ]
    listed = (await client.get(f"/api/conversations/{conversation_id}/messages/")).json()["results"]
    assert [a["id"] for a in listed[0]["attachments"]] == [image["id"], notes["id"], report["id"]]
    assert listed[0]["attachments"][0] == image


async def test_committed_blob_lives_in_the_conversations_own_store(scripted_provider, attachment_root):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    image = await upload(client, "photo.png", png_bytes())
    await send_sse(client, conversation_id, content="hi", attachment_ids=[image["id"]])
    blob = conversation_blob(conversation_id, image["sha256"])
    assert blob.read_bytes() == png_bytes()
    assert blob.is_relative_to(attachment_root / "conversations" / conversation_id)


async def test_later_sends_project_earlier_attachments_again(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    notes = await upload(client, "notes.md", MARKDOWN)
    await send_sse(client, conversation_id, content="read this", attachment_ids=[notes["id"]])
    await send_sse(client, conversation_id, content="and now?")
    items = scripted_provider.last_request().body["input"]
    first_user = [item for item in items if item["role"] == "user"][0]
    assert first_user["content"][1]["text"].endswith(MARKDOWN.decode())


async def test_tampered_blob_blocks_the_send_naming_the_attachment(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    notes = await upload(client, "notes.md", MARKDOWN)
    await send_sse(client, conversation_id, content="read this", attachment_ids=[notes["id"]])
    blob = conversation_blob(conversation_id, notes["sha256"])
    os.chmod(blob, 0o644)
    blob.write_bytes(MARKDOWN.replace(b"Thursday", b"Friday!!"))  # same size, other bytes
    requests_before = len(scripted_provider.requests)

    response = await send_json(client, conversation_id, content="what day?")
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "attachment_tampered"
    assert "notes.md" in body["detail"] and notes["id"] in body["detail"]
    assert len(scripted_provider.requests) == requests_before  # nothing reached the model
    # The earlier turn and its manifest are untouched; the blocked turn wrote nothing.
    rows = await messages_of(conversation_id)
    assert [m.content for m in rows if m.role == Role.USER] == ["read this"]
    assert await sync_to_async(MessageAttachment.objects.filter(message__conversation_id=conversation_id).count)() == 1


async def test_missing_blob_blocks_the_send_naming_the_attachment(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    image = await upload(client, "photo.png", png_bytes())
    events = await send_sse(client, conversation_id, content="look", attachment_ids=[image["id"]])
    conversation_blob(conversation_id, image["sha256"]).unlink()
    requests_before = len(scripted_provider.requests)

    retry = await client.post(f"/api/conversations/{conversation_id}/messages/{events[1][1]['id']}/retry/")
    assert retry.status_code == 409
    assert retry.json()["error"] == "attachment_missing" and "photo.png" in retry.json()["detail"]
    send = await send_json(client, conversation_id, content="still there?")
    assert send.status_code == 409 and send.json()["error"] == "attachment_missing"
    assert len(scripted_provider.requests) == requests_before
    assert await user_turn_count(conversation_id) == 1  # the attachment-bearing turn is kept


async def test_restoring_the_blob_lets_the_blocked_turn_continue(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    notes = await upload(client, "notes.md", MARKDOWN)
    await send_sse(client, conversation_id, content="read", attachment_ids=[notes["id"]])
    blob = conversation_blob(conversation_id, notes["sha256"])
    kept = blob.read_bytes()
    blob.unlink()
    assert (await send_json(client, conversation_id, content="again")).status_code == 409
    blob.write_bytes(kept)  # restored from a backup
    events = await send_sse(client, conversation_id, content="again")
    assert events[-1][1]["status"] == "complete"


async def test_retry_of_an_attachment_only_turn_carries_the_exact_ordered_manifest(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    table = await upload(client, "table.csv", b"a,b\n1,2\n")
    image = await upload(client, "photo.png", png_bytes())
    notes = await upload(client, "notes.md", MARKDOWN)
    order = [table["id"], image["id"], notes["id"]]
    scripted_provider.script(ScriptedReply(status=500, error_message="boom"))
    events = await send_sse(client, conversation_id, attachment_ids=order)
    assert events[-1][1]["status"] == "failed"
    first = last_user_content(scripted_provider.last_request().body)

    response = await client.post(f"/api/conversations/{conversation_id}/messages/{events[1][1]['id']}/retry/")
    retry_events = parse_sse(await read_streaming(response))
    assert retry_events[-1][1]["status"] == "complete"
    retried = last_user_content(scripted_provider.last_request().body)
    assert retried == first
    assert [part["type"] for part in retried] == ["input_text", "input_image", "input_text"]  # no text part: none typed
    assert retried[0]["text"].startswith("[Attached file “table.csv” (text/csv)]")
    assert retried[2]["text"].startswith("[Attached file “notes.md”")
    listed = (await client.get(f"/api/conversations/{conversation_id}/messages/")).json()["results"]
    assert listed[0]["content"] == "" and [a["id"] for a in listed[0]["attachments"]] == order


async def test_repeated_client_message_id_resumes_with_the_same_manifest(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    image = await upload(client, "photo.png", png_bytes())
    notes = await upload(client, "notes.md", MARKDOWN)
    client_id = "5b0a3f8e-6c55-4d8e-9d55-3f1d5a0b6c11"
    scripted_provider.script(ScriptedReply(status=500, error_message="boom"))
    await send_sse(client, conversation_id, content="both", client_message_id=client_id,
                   attachment_ids=[notes["id"], image["id"]])
    first = last_user_content(scripted_provider.last_request().body)
    events = await send_sse(client, conversation_id, content="both", client_message_id=client_id,
                            attachment_ids=[notes["id"], image["id"]])
    assert events[-1][1]["status"] == "complete"
    assert last_user_content(scripted_provider.last_request().body) == first
    assert await user_turn_count(conversation_id) == 1

    other_order = await send_json(client, conversation_id, content="both", client_message_id=client_id,
                                  attachment_ids=[image["id"], notes["id"]])
    assert other_order.status_code == 409 and other_order.json()["error"] == "client_message_id_conflict"


# --- Bad input ---------------------------------------------------------------


async def test_oversize_upload_is_refused_with_413(scripted_provider, settings, attachment_root):
    settings.ELION_ATTACHMENT_MAX_BYTES = 64
    response = await AsyncClient().post("/api/attachments/", {"file": SimpleUploadedFile("big.txt", b"x" * 65)})
    assert response.status_code == 413 and response.json()["error"] == "attachment_too_large"
    assert await sync_to_async(Attachment.objects.count)() == 0
    assert not list(attachment_store.blobs_in(attachment_store.upload_store()))


@pytest.mark.parametrize(
    ("name", "data", "status", "error"),
    [
        ("empty.txt", b"", 400, "empty_file"),
        ("blank.md", b"  \n\n ", 400, "empty_file"),
        ("program.exe", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\xff\xff", 415, "unsupported_attachment_type"),
        ("fake.png", b"\x89PNG not really\x00\x01", 415, "unsupported_attachment_type"),
    ],
)
async def test_bad_uploads_are_refused_with_a_clear_4xx(scripted_provider, name, data, status, error):
    response = await AsyncClient().post("/api/attachments/", {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == status and response.json()["error"] == error, response.content
    assert await sync_to_async(Attachment.objects.count)() == 0


async def test_upload_without_a_file_is_refused(scripted_provider):
    client = AsyncClient()
    assert (await client.post("/api/attachments/", {})).json()["error"] == "file_required"
    response = await client.post("/api/attachments/", {"name": "x"}, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "file_required"


def raw_multipart(filename: str, data: bytes) -> tuple[bytes, str]:
    """A multipart body exactly as a hostile client might send it (the test client would clean the name)."""
    boundary = "elionboundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode() + data + f"\r\n--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [("../../etc/passwd.txt", "passwd.txt"), ("..\\..\\windows\\win.ini.md", "win.ini.md"),
     ("/abs/.hidden", "hidden"), ("%2e%2e%2fx.txt", "%2e%2e%2fx.txt")],  # never decoded, never a path,
)
async def test_path_traversal_in_upload_names_is_neutralised(scripted_provider, attachment_root, raw, clean):
    body, content_type = raw_multipart(raw, b"plain text\n")
    response = await AsyncClient().post("/api/attachments/", body, content_type=content_type)
    assert response.status_code == 201, response.content
    assert response.json()["name"] == clean
    stored = [path for path in attachment_root.rglob("*") if path.is_file()]
    assert stored == [attachment_store.blob_path(attachment_store.upload_store(), response.json()["sha256"])]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [("../../etc/passwd", "passwd"), ("C:\\x\\..\\y.txt", "y.txt"), ("..", "attachment"), ("", "attachment"),
     ("line\nbreak\x00.txt", "linebreak.txt"), ("a" * 300 + ".txt", "a" * 200)],
)
async def test_attachment_names_are_display_names_never_paths(raw, clean):
    from transcript.attachments.upload import attachment_name_clean

    assert attachment_name_clean(raw) == clean


async def test_unknown_or_malformed_attachment_ids_are_refused(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    unknown = await send_json(client, conversation_id, content="x", attachment_ids=["0b7f1c0e-0000-4000-8000-000000000000"])
    assert unknown.status_code == 404 and unknown.json()["error"] == "attachment_not_found"
    malformed = await send_json(client, conversation_id, content="x", attachment_ids=["../etc"])
    assert malformed.status_code == 400 and malformed.json()["error"] == "invalid_attachment_ids"
    not_a_list = await send_json(client, conversation_id, content="x", attachment_ids="abc")
    assert not_a_list.status_code == 400
    notes = await upload(client, "notes.md", MARKDOWN)
    duplicate = await send_json(client, conversation_id, content="x", attachment_ids=[notes["id"], notes["id"]])
    assert duplicate.status_code == 400 and duplicate.json()["error"] == "duplicate_attachment"
    empty = await send_json(client, conversation_id, content="", attachment_ids=[])
    assert empty.status_code == 400 and empty.json()["error"] == "empty_message"
    assert await user_turn_count(conversation_id) == 0


async def test_too_many_attachments_on_one_message_is_refused(scripted_provider, settings):
    settings.ELION_ATTACHMENTS_PER_MESSAGE = 1
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    first = await upload(client, "a.txt", b"a\n")
    second = await upload(client, "b.txt", b"b\n")
    response = await send_json(client, conversation_id, content="x", attachment_ids=[first["id"], second["id"]])
    assert response.status_code == 400 and response.json()["error"] == "too_many_attachments"


async def test_an_attachment_is_sent_once_and_only_in_its_own_conversation(scripted_provider):
    client = AsyncClient()
    here = await create_conversation(client)
    elsewhere = await create_conversation(client)
    scoped = await upload(client, "notes.md", MARKDOWN, conversation_id=here)
    refused = await send_json(client, elsewhere, content="steal", attachment_ids=[scoped["id"]])
    assert refused.status_code == 409 and refused.json()["error"] == "attachment_other_conversation"

    unscoped = await upload(client, "table.csv", b"a,b\n")
    await send_sse(client, here, content="mine", attachment_ids=[scoped["id"], unscoped["id"]])
    again = await send_json(client, elsewhere, content="reuse", attachment_ids=[unscoped["id"]])
    assert again.status_code == 409 and again.json()["error"] == "attachment_already_attached"
    assert await user_turn_count(elsewhere) == 0


async def test_attachment_download_is_verified_and_never_rendered_as_html(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    image = await upload(client, "photo.png", png_bytes())
    page = await upload(client, "evil.html", b"<script>alert(1)</script>\n")
    assert page["mime"] == "text/plain"
    await send_sse(client, conversation_id, content="files", attachment_ids=[image["id"], page["id"]])

    shown = await client.get(f"/api/conversations/{conversation_id}/attachments/{image['id']}/")
    assert shown.status_code == 200 and shown.content == png_bytes()
    assert shown["Content-Type"] == "image/png" and shown["X-Content-Type-Options"] == "nosniff"
    assert shown["Content-Disposition"].startswith("inline;")
    html = await client.get(f"/api/conversations/{conversation_id}/attachments/{page['id']}/")
    assert html["Content-Type"] == "application/octet-stream"
    assert html["Content-Disposition"].startswith('attachment; filename="evil.html"')
    assert "sandbox" in html["Content-Security-Policy"]

    other = await create_conversation(client)
    assert (await client.get(f"/api/conversations/{other}/attachments/{image['id']}/")).status_code == 404
    conversation_blob(conversation_id, image["sha256"]).unlink()
    missing = await client.get(f"/api/conversations/{conversation_id}/attachments/{image['id']}/")
    assert missing.status_code == 409 and missing.json()["error"] == "attachment_missing"


async def test_attachment_endpoints_are_owner_only(scripted_provider, settings):
    settings.ELION_OWNER_PASSWORD = "correct horse"
    settings.ELION_PROTECTED = True
    client = AsyncClient()
    response = await client.post("/api/attachments/", {"file": SimpleUploadedFile("a.txt", b"a\n")})
    assert response.status_code == 401
    content = await client.get("/api/conversations/0b7f1c0e-0000-4000-8000-000000000000/attachments/x/")
    assert content.status_code == 401


async def test_an_oversize_body_is_refused_before_it_is_read(scripted_provider, settings, attachment_root):
    settings.ELION_ATTACHMENT_MAX_BYTES = 1024
    response = await AsyncClient().post("/api/attachments/", {"file": SimpleUploadedFile("big.txt", b"x" * 200_000)})
    assert response.status_code == 413 and response.json()["error"] == "attachment_too_large"
    assert "1 KB" in response.json()["detail"]


async def test_websocket_send_carries_attachments_like_sse(scripted_provider):
    from channels.testing import WebsocketCommunicator

    from elion.asgi import application

    client = AsyncClient()
    conversation_id = await create_conversation(client)
    notes = await upload(client, "notes.md", MARKDOWN)
    headers = [(b"host", b"testserver"), (b"origin", b"http://testserver")]
    ws = WebsocketCommunicator(application, f"/ws/conversations/{conversation_id}/", headers=headers)
    connected, _ = await ws.connect()
    assert connected
    await ws.send_json_to({"type": "send", "content": "", "attachment_ids": [notes["id"]]})
    frames = [await ws.receive_json_from(timeout=10)]
    while frames[-1]["type"] != "done":
        frames.append(await ws.receive_json_from(timeout=10))
    assert frames[0]["type"] == "user_message" and frames[-1]["status"] == "complete"
    await ws.disconnect()
    assert last_user_content(scripted_provider.last_request().body) == [
        {"type": "input_text", "text": "[Attached file “notes.md” (text/markdown)]\n" + MARKDOWN.decode()}
    ]
    export = await client.get(f"/api/conversations/{conversation_id}/export/?format=markdown")
    assert "[Attachment: notes.md (text/markdown)]" in (await read_streaming(export)).decode()


async def test_a_messages_manifest_is_immutable(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    notes = await upload(client, "notes.md", MARKDOWN)
    await send_sse(client, conversation_id, content="x", attachment_ids=[notes["id"]])
    entry = await sync_to_async(MessageAttachment.objects.get)(attachment_id=notes["id"])
    entry.position = 5
    with pytest.raises(ValueError, match="immutable"):
        await sync_to_async(entry.save)()
