"""Sending through the HTTP API in an async test: a new conversation, one send read as its SSE events, the newest
reply's row."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.test import AsyncClient

from tests.conftest import parse_sse, read_streaming
from transcript.models import Message, Role


async def new_conversation(client: AsyncClient) -> str:
    response = await client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


async def send(client: AsyncClient, conversation_id: str, content: str) -> list[tuple[str, dict]]:
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/", {"content": content}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return parse_sse(await read_streaming(response))


@sync_to_async
def last_reply(conversation_id: str) -> Message:
    return Message.objects.filter(conversation_id=conversation_id, role=Role.ASSISTANT).order_by("-seq").first()
