"""Reading the message tree: the live branch and the tree's invariants.

Children are never stored; they are derived from `parent`. The live branch is
the walk from the conversation's `head` up to the root, reversed.

One rule decides every step of every walk (`tree_break`): a message's parent
is stored, in the same conversation, with a smaller seq. A walk that meets a
step breaking it raises `BrokenTree` naming the step, never a partial branch:
seed 004 asks that what cannot be resumed coherently says why. Every reader of
the live branch walks through `walk_up` (or, inside the database, checks its
steps with `tree_break` over the rows its query returns: `transcript.branch_window`,
`live_ids_among`); `transcript.integrity` reports the breaks, and repairs what
can be repaired without inventing history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar
from uuid import UUID

from django.db import connection

from elion.base.errors import Conflict
from transcript.models import Conversation, Message, MessageKind, MessageStatus, Role


class TreeRow(Protocol):
    """What a walk reads of a message: a `Message`, or a `TreeStep` read as plain values."""

    @property
    def id(self) -> UUID: ...
    @property
    def parent_id(self) -> UUID | None: ...
    @property
    def seq(self) -> int: ...
    @property
    def conversation_id(self) -> UUID: ...


class TreeStep(NamedTuple):
    """A message's place in the tree, without its content (a walk over `values_list` rows)."""

    id: UUID
    parent_id: UUID | None
    seq: int
    conversation_id: UUID


TREE_STEP_FIELDS = ("id", "parent_id", "seq", "conversation_id")
Row = TypeVar("Row", bound=TreeRow)


@dataclass(frozen=True)
class TreeBreak:
    """A step from a message to its parent that breaks the tree."""

    kind: str  # orphan_parent | foreign_parent | parent_seq (`tree_break`); missing_tip (a walk's start)
    conversation_id: UUID | None  # None: a tip looked up among no rows at all
    message_id: UUID
    parent_id: UUID
    detail: str


def tree_break(child: TreeRow, parent: TreeRow | None) -> TreeBreak | None:
    """The one rule of a step up the tree: `parent` (the row stored under `child.parent_id`, None when
    there is none) is in `child`'s conversation with a smaller seq. None when the step is sound."""
    if child.parent_id is None:
        return None
    where = (child.conversation_id, child.id, child.parent_id)
    if parent is None:
        return TreeBreak("orphan_parent", *where, f"missing message {child.parent_id}: message {child.id} "
                         "has a parent outside the conversation")
    if parent.conversation_id != child.conversation_id:
        return TreeBreak("foreign_parent", *where, f"message {child.id} has its parent {child.parent_id} "
                         f"in another conversation ({parent.conversation_id})")
    if parent.seq >= child.seq:
        return TreeBreak("parent_seq", *where, f"message {child.id} has seq {child.seq}, not above its "
                         f"parent's {parent.seq}")
    return None


class BrokenTree(Conflict, ValueError):
    """A walk met a step that breaks the tree: the branch cannot be read coherently, and this says why.

    A 409 in the project's error shape at every interface (a ValueError too, for the callers of the
    walk that predate it)."""

    code = "broken_transcript"

    def __init__(self, step: TreeBreak) -> None:
        super().__init__(
            f"The stored transcript of conversation {step.conversation_id} is broken ({step.detail}); "
            "`manage.py check_transcripts` reports it and repairs what can be repaired."
        )
        self.step = step


def walk_up(
    messages: Mapping[UUID, Row], tip_id: UUID | None, *, until: Callable[[UUID], bool] | None = None
) -> Iterator[Row]:
    """The messages from `tip_id` up toward the root, nearest first: every live-branch walk.

    Each step is checked by `tree_break` before it is taken (seq falls at every
    step, so no walk can loop); a broken one raises `BrokenTree`. With `until`,
    the walk stops before the first message whose id it accepts (the step to it
    is still checked). A `tip_id` that is not among `messages` raises too.
    """
    if tip_id is None:
        return
    message = messages.get(tip_id)
    if message is None:
        raise BrokenTree(TreeBreak("missing_tip", _conversation_of(messages), tip_id, tip_id,
                                   f"missing message {tip_id} on the path to the root"))
    if until is not None and until(tip_id):
        return
    while True:
        yield message
        parent_id = message.parent_id
        if parent_id is None:
            return
        parent = messages.get(parent_id)
        broken = tree_break(message, parent)
        if broken is not None:
            raise BrokenTree(broken)
        if until is not None and until(parent_id):
            return
        message = parent


def _conversation_of(messages: Mapping[UUID, TreeRow]) -> UUID | None:
    return next((message.conversation_id for message in messages.values()), None)


def tree_messages(conversation: Conversation) -> dict[UUID, Message]:
    """Every message of the tree (the stored static prompt stands outside it)."""
    rows = Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)
    return {message.id: message for message in rows}


def walk_to_root(messages: Mapping[UUID, Row], tip_id: UUID | None) -> list[Row]:
    """Messages from the root down to `tip_id` (`walk_up`, reversed); `BrokenTree` on a broken step."""
    branch = list(walk_up(messages, tip_id))
    branch.reverse()
    return branch


def live_branch(conversation: Conversation) -> list[Message]:
    """The live branch in order: root first, head last. No system message."""
    return walk_to_root(tree_messages(conversation), conversation.head_id)


def live_ids_among(message_ids: Iterable[UUID], head_ids: Iterable[UUID | None]) -> set[UUID]:
    """Which of `message_ids` lie on a live branch: the path from one of `head_ids`
    (their conversations' heads) up to its root.

    One recursive query walks the branches inside the database and returns
    only the matching ids, so no branch is loaded into Python however long;
    with them it returns every step of the walks that breaks the tree (with
    the parent it names), so `tree_break` judges those here and a broken
    branch raises `BrokenTree` as `walk_up` does.
    """
    message_ids, head_ids = list(message_ids), [h for h in set(head_ids) if h is not None]
    if not message_ids or not head_ids:
        return set()
    table = connection.ops.quote_name(Message._meta.db_table)
    sql = (
        f"WITH RECURSIVE walk(id, parent_id, seq, conversation_id) AS ("
        f" SELECT m.id, m.parent_id, m.seq, m.conversation_id FROM {table} m"
        f" WHERE m.id IN ({', '.join(['%s'] * len(head_ids))})"
        f" UNION"
        f" SELECT m.id, m.parent_id, m.seq, m.conversation_id FROM {table} m JOIN walk w ON m.id = w.parent_id"
        f" WHERE m.conversation_id = w.conversation_id AND m.seq < w.seq"
        f") SELECT w.id, w.parent_id, w.seq, w.conversation_id, p.id, p.parent_id, p.seq, p.conversation_id"
        f" FROM walk w LEFT JOIN {table} p ON p.id = w.parent_id"
        f" WHERE w.id IN ({', '.join(['%s'] * len(message_ids))}) OR ({BROKEN_STEP_SQL})"
    )
    found: set[UUID] = set()
    with connection.cursor() as cursor:
        cursor.execute(sql, tree_step_params(head_ids) + tree_step_params(message_ids))
        for row in cursor.fetchall():
            found.add(tree_step_checked(row).id)
    return found.intersection(message_ids)


# A step of a walk `w` to its parent row `p` (LEFT JOINed on `w.parent_id`) that `tree_break` refuses.
BROKEN_STEP_SQL = (
    "w.parent_id IS NOT NULL AND (p.id IS NULL OR p.conversation_id <> w.conversation_id OR p.seq >= w.seq)"
)


def tree_step_params(values: Iterable[UUID | None]) -> list:
    field = Message._meta.pk
    return [field.get_db_prep_value(value, connection) for value in values]


def tree_step_checked(row: tuple) -> TreeStep:
    """A walked row and its parent row as a query returns them (`TREE_STEP_FIELDS` twice, the parent's
    NULL when there is none): the row, once `tree_break` passed the step (else `BrokenTree`).

    A walk reads one conversation's rows, as `walk_up` over `tree_messages` does: a parent row of another
    conversation is not among them (`transcript.integrity` tells the two apart)."""
    child = TreeStep(*_tree_step_values(row[:4]))
    parent = TreeStep(*_tree_step_values(row[4:8])) if row[4] is not None else None
    if parent is not None and parent.conversation_id != child.conversation_id:
        parent = None
    broken = tree_break(child, parent)
    if broken is not None:
        raise BrokenTree(broken)
    return child


def _tree_step_values(values: tuple) -> tuple:
    pk, parent_id, seq, conversation_id = values
    return _uuid(pk), _uuid(parent_id) if parent_id is not None else None, int(seq), _uuid(conversation_id)


def _uuid(value: object) -> UUID:
    return value if isinstance(value, UUID) else UUID(str(value))


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
    """Every way the stored tree breaks seed 004's invariants (empty when sound): `tree_break` over
    every step, and any message of another conversation."""
    rows = {message.id: message for message in messages}
    problems: list[str] = []
    # A parent's seq is always smaller than its child's, so no walk can loop
    # and every walk ends at exactly one parentless message (its root). Editing
    # the very first turn makes a sibling root; each branch still has one root.
    for message in rows.values():
        if message.conversation_id != conversation_id:
            problems.append(f"{message.id} belongs to another conversation")
        broken = tree_break(message, rows.get(message.parent_id) if message.parent_id else None)
        if broken is not None:
            problems.append(broken.detail)
    return problems
