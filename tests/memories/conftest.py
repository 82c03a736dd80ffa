"""Factories and probes for the memory-snapshot tests."""

from __future__ import annotations

import pytest

MEMORY_HEADING = "## Long-term memories"


def memory_lines(prompt: str) -> list[str]:
    """The bullet lines of a prompt's long-term memory section ([] when absent)."""
    if MEMORY_HEADING not in prompt:
        return []
    section = prompt.split(MEMORY_HEADING, 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- [")]


def memory_texts(prompt: str) -> list[str]:
    return [line.split("] ", 1)[1] for line in memory_lines(prompt)]


def stored_prompt(conversation) -> str | None:
    from transcript.models import Message, Role

    message = Message.objects.filter(conversation_id=conversation.pk, role=Role.SYSTEM).first()
    return message.content if message else None


def fresh_prompt(conversation) -> str:
    """What a rebuild from the current rows gives."""
    from continuity.rules.prompt_policy import build_static_prompt
    from continuity.rules.prompt_store import prompt_inputs_for
    from elion.base.assistant_settings import assistant_settings_get
    from transcript.models import Conversation

    return build_static_prompt(prompt_inputs_for(Conversation.objects.get(pk=conversation.pk), settings_row=assistant_settings_get()))


def member_ids(conversation) -> set[int]:
    from memories.models import SnapshotMembership

    return set(SnapshotMembership.objects.filter(conversation_id=conversation.pk).values_list("memory_id", flat=True))


@pytest.fixture
def make_memory(db):
    from memories.services.memory_writes import memory_add

    def make(text, **kwargs):
        return memory_add(text=text, **kwargs)

    return make


@pytest.fixture
def store_prompt(db):
    """Store a conversation's static prompt the way the first send does (under its row lock)."""
    from django.db import transaction

    from continuity.rules.prompt_store import static_prompt_ensure
    from transcript.access import access_conversation

    def store(conversation):
        with transaction.atomic():
            locked = access_conversation(conversation.pk, lock=True)
            return static_prompt_ensure(locked).content

    return store


@pytest.fixture
def send_and_capture(db):
    """Send one message through the send pipeline and return the system prompt of the
    model request it assembled (what the provider gateway would send). The reply is
    then completed in place, so the next send is not blocked by a live stream.

    Tests of the wire itself use the scripted provider from an async test
    (`test_seed_example.py`); a sync test cannot share its transaction with the
    reply task.
    """
    from conversations.sending.commands import SendCommand
    from conversations.sending.prepare import send_prepare
    from transcript.models import Message, MessageStatus

    def send(conversation, content="Hello again."):
        prepared = send_prepare(SendCommand(conversation_id=conversation.pk, content=content))
        Message.objects.filter(pk=prepared.assistant_message_id).update(
            status=MessageStatus.COMPLETE, content="Scripted reply.", lease_expires_at=None
        )
        systems = [m["content"] for m in prepared.request.messages if m["role"] == "system"]
        assert systems, prepared.request.messages
        return systems[0]

    return send


def system_prompt_received(provider) -> str:
    """The first system message of the last request the scripted provider received."""
    body = provider.last_request().body
    items = body.get("input") or body.get("messages")
    systems = [item["content"] for item in items if item.get("role") == "system"]
    assert systems, f"no system message in {items!r}"
    return systems[0]
