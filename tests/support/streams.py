"""Streams in tests: a send opened and left running, the stored reply."""

from __future__ import annotations

from django.test import AsyncClient

from tests.support.sse_stream import SseStream
from transcript.models import Message


async def create_conversation(client: AsyncClient) -> str:
    response = await client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


async def open_send(client: AsyncClient, conversation_id: str, **body) -> SseStream:
    response = await client.post(f"/api/conversations/{conversation_id}/messages/", body, content_type="application/json")
    assert response.status_code == 200, response.content
    return SseStream(response.streaming_content)


def stored(message_id: str) -> Message:
    return Message.objects.get(pk=message_id)
