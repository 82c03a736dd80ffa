"""Sending through the HTTP API in tests: a conversation, a send read as SSE, the stored messages."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.test import AsyncClient

from tests.conftest import parse_sse, read_streaming
from transcript.models import Message


async def create_conversation(client: AsyncClient, **body) -> str:
    response = await client.post("/api/conversations/", {"persona": "elion", **body}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


async def send_sse(client: AsyncClient, conversation_id: str, **body) -> list[tuple[str, dict]]:
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/", body, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/event-stream")
    return parse_sse(await read_streaming(response))


@sync_to_async
def messages_of(conversation_id: str) -> list[Message]:
    return list(Message.objects.filter(conversation_id=conversation_id).order_by("seq"))
