"""Factories for the continuity tests: threads with turns, in stored order."""

from __future__ import annotations

import pytest


@pytest.fixture
def thread(make_conversation, make_turns):
    """A conversation with a straight chain of completed turns.

    `thread(("user", "hi"), ("assistant", "hello"), persona="elion", title="…")`
    """

    def make(*pairs, persona="elion", title="", **kwargs):
        conversation = make_conversation(persona=persona, title=title, **kwargs)
        if pairs:
            make_turns(conversation, *pairs)
        return conversation

    return make


@pytest.fixture
def add_message(db):
    """Append one message of any role/kind/status under the head and move the head."""
    from conversations.models import Message
    from conversations.provider.binding import binding_fields, configured_provider

    def add(conversation, role, content, *, kind="ordinary", status="complete", parent="head"):
        conversation.last_seq += 1
        message = Message.objects.create(
            conversation=conversation,
            parent=conversation.head if parent == "head" else parent,
            seq=conversation.last_seq,
            role=role,
            kind=kind,
            status=status,
            content=content,
            **binding_fields(configured_provider()),
        )
        conversation.head = message
        conversation.save(update_fields=["head", "last_seq"])
        return message

    return add
