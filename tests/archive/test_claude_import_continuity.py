"""Continuity rules unchanged by a Claude.ai import (issue 21): nothing it stored, and none of the memories its
export offered, enters a model request until the model asks (search_archive) or the owner confirms."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient

from tests.archive import claude_export as export
from tests.archive.conftest import make_zip
from tests.conftest import parse_sse, read_streaming
from tests.support.scripted_provider import ScriptedReply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

IMPORTED = ("Trim it again next Sunday", "read them slowly", "wick trimmed on Sunday", export.MEMORY_WORK,
            export.MEMORY_GARDEN, export.THOUGHT)


@sync_to_async
def claude_imported(archive_access: bool):
    from archive.services.importers.claude.store import archive_claude_import
    from conversations.services.settings_writes import assistant_settings_update

    assistant_settings_update(archive_access=archive_access)
    upload = SimpleUploadedFile("claude.zip", make_zip(export.members()))
    return archive_claude_import(uploads=[upload]).as_dict()


async def send(client: AsyncClient, conversation_id: str, content: str) -> None:
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/", {"content": content}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert parse_sse(await read_streaming(response))[-1][1]["status"] == "complete"


async def new_conversation(client: AsyncClient) -> str:
    response = await client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.mark.parametrize("archive_access", [False, True])
async def test_nothing_imported_from_claude_enters_a_request_unless_the_model_asks(scripted_provider, archive_access):
    body = await claude_imported(archive_access)
    assert body["conversations"] == 2 and len(body["memory_suggestions"]) == 4
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "Do you remember the lantern and when to trim the wick?")
    await send(client, conversation_id, "And grandmother's letters, and the lighthouse journal?")
    assert len(scripted_provider.requests) == 2
    for request in scripted_provider.requests:
        sent = json.dumps(request.body, ensure_ascii=False)
        for imported in IMPORTED:
            assert imported not in sent, imported
    if not archive_access:
        return
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "search_archive", "arguments": {"query": "wick trimmed"}}]),
        ScriptedReply(text="Your notes say Sunday."),
    )
    await send(client, conversation_id, "Search the archive for it.")
    asked = json.dumps(scripted_provider.requests[-1].body, ensure_ascii=False)
    assert "wick trimmed on Sunday" in asked  # the file's text, found on purpose, labelled as the file
    assert "Attachment: lantern-notes.txt" in asked
    assert export.MEMORY_WORK not in asked  # the offered memories were never added
