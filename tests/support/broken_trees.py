"""Conversations whose stored tree is broken one way each, for the tests of the one live-branch walk.

Each breaks the step from one message (the `broken_at` message) to its parent
the way a bad restore or a database without foreign-key enforcement could:
a parent that is not stored, a parent in another conversation, or a parent
whose seq is not below its child's.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from tests.support.factories import thread
from transcript.models import Conversation, Message

BREAKS = ("orphan_parent", "foreign_parent", "parent_seq")


@dataclass(frozen=True)
class BrokenThread:
    conversation: Conversation
    messages: list[Message]  # as stored before the break, root first
    broken_at: Message  # the message whose step to its parent is broken


def parent_unstored(message: Message) -> None:
    """Point `message` at a parent id no row has."""
    _parent_set_unchecked(message, uuid.uuid4())


def parent_restored(broken: BrokenThread) -> None:
    """Put the broken message's parent back (a test database must end with its foreign keys sound)."""
    before = broken.messages[broken.messages.index(broken.broken_at) - 1]
    _parent_set_unchecked(broken.broken_at, before.id)
    Message.objects.filter(pk=before.pk).update(seq=before.seq)


def _parent_set_unchecked(message: Message, parent_id: uuid.UUID) -> None:
    """Inside a test's transaction: both databases check foreign keys at commit (deferred), which a test
    never reaches; `parent_restored` mends the row before the test's teardown checks them."""
    Message.objects.filter(pk=message.pk).update(parent_id=parent_id)


def broken_thread(kind: str, *, length: int = 10, at: int = 4) -> BrokenThread:
    """A straight thread of `length` turns whose `at`-th message (0: the root) has a broken step up."""
    conversation = thread(*[("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(length)])
    messages = list(Message.objects.filter(conversation=conversation).order_by("seq"))
    child, parent = messages[at], messages[at - 1]
    if kind == "orphan_parent":
        parent_unstored(child)
    elif kind == "foreign_parent":
        elsewhere = thread(("user", "another conversation's turn"))
        Message.objects.filter(pk=child.pk).update(parent=Message.objects.get(conversation=elsewhere))
    elif kind == "parent_seq":
        Message.objects.filter(pk=parent.pk).update(seq=child.seq + 1000)
    else:
        raise ValueError(kind)
    conversation.refresh_from_db()
    return BrokenThread(conversation, messages, child)
