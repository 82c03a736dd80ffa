"""Forking through the API in tests, and settling a reply first."""

from __future__ import annotations

from django.test import Client

from transcript.models import Conversation, Message, MessageStatus


def fork(client: Client, conversation: Conversation, message: Message | str, key: str | None = "key-1"):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    message_id = str(message.id) if isinstance(message, Message) else message
    return client.post(
        f"/api/conversations/{conversation.id}/fork/", {"message_id": message_id}, content_type="application/json",
        **headers,
    )


def finish_reply(conversation: Conversation, text: str = "Seen.") -> Message:
    """Complete the streaming reply send_prepare left (no provider I/O in these tests)."""
    conversation.refresh_from_db()
    Message.objects.filter(pk=conversation.head_id).update(
        status=MessageStatus.COMPLETE, content=text, lease_expires_at=None
    )
    return Message.objects.get(pk=conversation.head_id)
