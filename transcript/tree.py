"""Reading the message tree: the live branch and the tree's invariants.

Children are never stored; they are derived from `parent`. The live branch is
the walk from the conversation's `head` up to the root, reversed.
"""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from django.db import connection

from conversations.models import Conversation, Message, MessageKind, MessageStatus, Role


def tree_messages(conversation: Conversation) -> dict[UUID, Message]:
    """Every message of the tree (the stored static prompt stands outside it)."""
    rows = Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)
    return {message.id: message for message in rows}


def walk_to_root(messages: dict[UUID, Message], tip_id: UUID | None) -> list[Message]:
    """Messages from the root down to `tip_id`.

    Precondition: the tree is well formed (see `tree_problems`); a missing
    parent or a cycle raises ValueError rather than returning a partial branch.
    """
    branch: list[Message] = []
    seen: set[UUID] = set()
    current = tip_id
    while current is not None:
        if current in seen:
            raise ValueError(f"cycle in message tree at {current}")
        message = messages.get(current)
        if message is None:
            raise ValueError(f"missing message {current} on the path to the root")
        seen.add(current)
        branch.append(message)
        current = message.parent_id
    branch.reverse()
    return branch


def live_branch(conversation: Conversation) -> list[Message]:
    """The live branch in order: root first, head last. No system message."""
    return walk_to_root(tree_messages(conversation), conversation.head_id)


def live_ids_among(message_ids: Iterable[UUID], head_ids: Iterable[UUID | None]) -> set[UUID]:
    """Which of `message_ids` lie on a live branch: the path from one of `head_ids`
    (their conversations' heads) up to its root.

    One recursive query walks the branches inside the database and returns
    only the matching ids, so no branch is loaded into Python however long.
    """
    message_ids, head_ids = list(message_ids), [h for h in set(head_ids) if h is not None]
    if not message_ids or not head_ids:
        return set()
    field = Message._meta.pk
    table = connection.ops.quote_name(Message._meta.db_table)

    def prep(values: Iterable[UUID | None]) -> list[str]:
        return [field.get_db_prep_value(value, connection) for value in values]

    sql = (
        f"WITH RECURSIVE walk(id, parent_id) AS ("
        f" SELECT m.id, m.parent_id FROM {table} m WHERE m.id IN ({', '.join(['%s'] * len(head_ids))})"
        f" UNION"
        f" SELECT m.id, m.parent_id FROM {table} m JOIN walk w ON m.id = w.parent_id"
        f") SELECT id FROM walk WHERE id IN ({', '.join(['%s'] * len(message_ids))})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, prep(head_ids) + prep(message_ids))
        return {value if isinstance(value, UUID) else UUID(str(value)) for (value,) in cursor.fetchall()}


def static_prompt_message(conversation: Conversation) -> Message | None:
    return Message.objects.filter(conversation=conversation, role=Role.SYSTEM).first()


def is_projectable(message: Message, *, has_attachments: bool = False) -> bool:
    """May this live-branch message be sent to the model as history?

    Failed replies and the reply being streamed are not history; a Branch
    handoff bubble travels in the static prompt's continuity slot instead.
    An attachment-only user turn is history even without text.
    """
    if message.role not in (Role.USER, Role.ASSISTANT):
        return False
    if message.kind == MessageKind.HANDOFF_ARTIFACT:
        return False
    if message.status in (MessageStatus.FAILED, MessageStatus.STREAMING):
        return False
    return bool(message.content.strip()) or has_attachments


def tree_problems(conversation_id: UUID, messages: Iterable[Message]) -> list[str]:
    """Every way the stored tree breaks seed 004's invariants (empty when sound)."""
    rows = {message.id: message for message in messages}
    problems: list[str] = []
    # A parent's seq is always smaller than its child's, so no walk can loop
    # and every walk ends at exactly one parentless message (its root). Editing
    # the very first turn makes a sibling root; each branch still has one root.
    for message in rows.values():
        if message.conversation_id != conversation_id:
            problems.append(f"{message.id} belongs to another conversation")
        if message.parent_id is None:
            continue
        parent = rows.get(message.parent_id)
        if parent is None:
            problems.append(f"{message.id} has a parent outside the conversation")
        elif parent.seq >= message.seq:
            problems.append(f"{message.id} has seq {message.seq} not above its parent's {parent.seq}")
    return problems
