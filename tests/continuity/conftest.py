"""Factories for the continuity tests: threads with turns, in stored order."""

from __future__ import annotations

import pytest

from tests.support.compaction import long_thread  # noqa: F401 - a fixture of the compaction tests


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
    from tests.support.factories import turns_append

    def add(conversation, role, content, *, kind="ordinary", status="complete", parent="head"):
        (message,) = turns_append(conversation, (role, content), parent=parent, kind=kind, status=status)
        return message

    return add
