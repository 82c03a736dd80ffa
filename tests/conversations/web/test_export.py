"""Exports stream (issue 18): the same bytes as the whole-in-memory exports, a batch of rows at a time.

`previous_markdown` and `previous_json` are the exports as they were built
before streaming (the whole live branch loaded, rendered, then sent), kept
here as the reference the streamed bytes must equal.
"""

from __future__ import annotations

import json
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client
from rest_framework.renderers import JSONRenderer

from artifacts.services import artifacts_export
from continuity.rules.labels import speaker_label
from continuity.web.conversation_shape import conversation_repr
from conversations.services.threads.thread_writes import conversation_rewind
from conversations.web.serializers import message_repr
from conversations.web.threads.export import EXPORT_BATCH
from elion.base.assistant_settings import assistant_settings_get
from tests.support.factories import thread, turns_append
from transcript.attachments.manifests import manifests_for
from transcript.models import Attachment, Message, MessageAttachment, MessageKind, MessageStatus, Role
from transcript.tree import live_branch

pytestmark = pytest.mark.django_db


def previous_markdown(conversation) -> bytes:
    settings_row = assistant_settings_get()
    lines = [f"# {conversation.display_title}", ""]
    turns = [m for m in live_branch(conversation) if m.role in (Role.USER, Role.ASSISTANT)]
    manifests = manifests_for(turns)
    for message in turns:
        label = speaker_label(
            message.role, conversation.persona,
            owner_name=settings_row.owner_name, display_name=settings_row.display_name,
        )
        lines += [label, message.content]
        lines += [f"[Attachment: {attachment.name} ({attachment.mime})]" for attachment in manifests.get(message.id, [])]
        lines.append("")
    return ("\n".join(lines).rstrip() + "\n").encode()


def previous_json(conversation) -> bytes:
    branch = live_branch(conversation)
    manifests = manifests_for(branch)
    body = {
        "conversation": conversation_repr(conversation),
        # Since reasoning items are kept (README changelog), each message also carries its stored parts.
        "messages": [{**message_repr(m, manifests.get(m.id, [])), "parts": m.parts or []} for m in branch],
        "artifacts": artifacts_export(conversation.id),  # since artifacts (README changelog)
    }
    return JSONRenderer().render(body)


def attach(message: Message, *names: tuple[str, str]) -> None:
    for position, (name, mime) in enumerate(names):
        attachment = Attachment.objects.create(
            sha256=uuid.uuid4().hex * 2, size=10 + position, name=name, mime=mime,
            kind="image" if mime.startswith("image/") else "file", attached_at=message.created_at,
        )
        MessageAttachment.objects.create(message=message, position=position, attachment=attachment)


def rich_thread(last_text: str = "Good night.\n\n  \t"):
    """Every kind of row an export meets: a handoff bubble, attachments, tool parts, failed and
    interrupted replies, a rewound-away branch, the stored prompt, a role=tool row, odd characters."""
    conversation = thread(title="Évening — «letters»")
    (bubble,) = turns_append(conversation, ("assistant", "### Continued from “Old”\n\nAUMA said:\nquoted"))
    Message.objects.filter(pk=bubble.pk).update(
        kind=MessageKind.HANDOFF_ARTIFACT, metadata={"source_conversation_id": str(uuid.uuid4()), "source_message_ids": []}
    )
    question, answer = turns_append(conversation, ("user", "Look at these\u2028and this\u2029."), ("assistant", "Seen: ✓ 🌙"))
    attach(question, ("garden.png", "image/png"), ("notes.md", "text/markdown"))
    Message.objects.filter(pk=answer.pk).update(
        parts=[{"type": "tool_call", "call_id": "c1", "name": "archive_search", "arguments": "{\"q\": \"x\"}"},
               {"type": "tool_result", "call_id": "c1", "output": "two passages"}],
        metadata={"usage": {"input_tokens": 12, "output_tokens": 3}, "nested": {"list": [1, 2.5, None, True]}},
    )
    turns_append(conversation, ("user", "abandoned"), ("assistant", "abandoned reply"))
    conversation_rewind(conversation_id=conversation.id, message_id=answer.id)
    conversation.refresh_from_db()
    turns_append(conversation, ("user", "Again?"))
    turns_append(conversation, ("assistant", "It failed."), status=MessageStatus.FAILED, error="provider_error",
                 error_detail="The provider answered 500.")
    turns_append(conversation, ("tool", "a tool row"))
    turns_append(conversation, ("user", "Still there?  "), ("assistant", "Cut off mid"), status=MessageStatus.INTERRUPTED)
    turns_append(conversation, ("user", ""), ("assistant", last_text))
    Message.objects.create(conversation=conversation, seq=900, role=Role.SYSTEM, content="stored prompt")
    conversation.refresh_from_db()
    return conversation


def sync_export(conversation, fmt: str):
    response = Client().get(f"/api/conversations/{conversation.id}/export/?format={fmt}")
    assert response.status_code == 200 and response.streaming
    return response, b"".join(response.streaming_content)


def asgi_export(conversation, fmt: str):
    async def fetch():
        response = await AsyncClient().get(f"/api/conversations/{conversation.id}/export/?format={fmt}")
        assert response.status_code == 200 and response.streaming
        return response, [chunk async for chunk in response.streaming_content]

    response, chunks = async_to_sync(fetch)()
    return response, chunks


@pytest.mark.parametrize("last_text", ["Good night.\n\n  \t", "Good night.", "   \n"])
def test_streamed_exports_are_byte_for_byte_the_previous_whole_exports(last_text):
    conversation = rich_thread(last_text)
    markdown, json_body = previous_markdown(conversation), previous_json(conversation)
    assert b"abandoned" not in markdown + json_body and b"stored prompt" not in markdown + json_body  # a real tree
    for export in (sync_export, asgi_export):
        response, body = export(conversation, "markdown")
        assert (b"".join(body) if isinstance(body, list) else body) == markdown
        assert response["Content-Type"] == "text/markdown; charset=utf-8"
        assert response["Content-Disposition"] == f'attachment; filename="conversation-{conversation.id}.md"'
        response, body = export(conversation, "json")
        assert (b"".join(body) if isinstance(body, list) else body) == json_body
        assert response["Content-Type"] == "application/json"


def test_an_empty_conversation_exports_as_before():
    conversation = thread(title="Nothing yet")
    assert sync_export(conversation, "markdown")[1] == previous_markdown(conversation) == b"# Nothing yet\n"
    assert sync_export(conversation, "json")[1] == previous_json(conversation)


def test_a_long_thread_export_streams_in_bounded_chunks_and_is_complete():
    count = 2_000
    conversation = thread(
        *[("user" if i % 2 == 0 else "assistant", f"turn {i} " + "words " * 20) for i in range(count)], title="Long"
    )
    conversation.refresh_from_db()
    response, chunks = asgi_export(conversation, "json")
    # A batch of rows per chunk, never the whole thread in one piece.
    assert len(chunks) >= count // EXPORT_BATCH
    assert max(len(chunk) for chunk in chunks) < sum(len(chunk) for chunk in chunks) / 5
    messages = json.loads(b"".join(chunks))["messages"]
    assert [m["content"].split()[1] for m in messages] == [str(i) for i in range(count)]
    response, chunks = asgi_export(conversation, "markdown")
    assert len(chunks) >= count // EXPORT_BATCH
    text = b"".join(chunks).decode()
    assert text.count(" said:\n") == count and text.endswith(f"turn {count - 1} " + "words " * 19 + "words\n")
