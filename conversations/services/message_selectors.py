"""Reads of a thread's messages that pages and the API share. Selectors: nothing here writes.

`message_window` is the live-branch window a page request names, for the messages API
(`GET …/messages/?limit=N&before=|around=`) and the chat page's window fragment alike;
`messages_shown` is each message with what the API shows beside it (its attachment manifest
and its versions), read for a whole window or segment at once: a statement each, however
many messages. Reading the query string is the web layer's (`conversations.web.message_paging`);
shaping the answer is the serializers'.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from transcript.attachments.manifests import manifests_for
from transcript.branch_window import (
    BranchWindow,
    branch_window_around,
    branch_window_before,
    branch_window_newest,
)
from transcript.leases import stale_streams_read_as_interrupted
from transcript.models import Attachment, Conversation, Message
from transcript.siblings import Siblings, siblings_for


def message_window(
    conversation: Conversation, *, limit: int, before: UUID | None = None, around: UUID | None = None
) -> BranchWindow:
    """`limit` live-branch messages before `before`, around `around`, or the newest (404
    `message_not_found` for a cursor not on the live branch)."""
    if before is not None:
        return branch_window_before(conversation, cursor_id=before, limit=limit)
    if around is not None:
        return branch_window_around(conversation, cursor_id=around, limit=limit)
    return branch_window_newest(conversation, limit=limit)


@dataclass(frozen=True)
class MessageShown:
    """A message with its attachment manifest (in order) and its versions (the parent's children)."""

    message: Message
    attachments: list[Attachment]
    siblings: Siblings


def messages_shown(conversation: Conversation, messages: list[Message]) -> list[MessageShown]:
    """`messages` (a slice of one branch) with their manifests and versions: two statements however
    many. A reply whose stream's lease ran out reads as interrupted (reads don't write: the sweep
    stores it)."""
    stale_streams_read_as_interrupted(messages)
    manifests = manifests_for(messages)
    siblings = siblings_for(conversation.id, messages)
    return [MessageShown(m, manifests.get(m.id, []), siblings[m.id]) for m in messages]


@dataclass(frozen=True)
class MessagePage:
    """A page of the messages API: the window's messages as shown, and whether more lie on either side."""

    messages: list[MessageShown]
    has_more_before: bool
    has_more_after: bool


def message_page(
    conversation: Conversation, *, limit: int, before: UUID | None = None, around: UUID | None = None
) -> MessagePage:
    """The page `message_window` names, its messages with their manifests and versions."""
    window = message_window(conversation, limit=limit, before=before, around=around)
    return MessagePage(messages_shown(conversation, window.messages), window.has_more_before, window.has_more_after)
