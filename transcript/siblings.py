"""Versions: a message's siblings (its parent's children) and the head a switch to it chooses.

Retry appends a sibling reply under the same user turn; edit-and-resend a
sibling user turn under the same parent (a sibling root for the first turn);
a send after a rewind a sibling of the rewound-away turn. Siblings are
numbered 1… in creation order (seq), the way "‹ 2 / 3 ›" shows them; the
roots of a conversation are siblings of each other. The stored prompt stands
outside the tree and is never a sibling.

`children_read` finds the children of many parents in one statement (a page
or window of messages); `children_in` derives them from rows already read
(the whole branch, the send's tree). `switch_head` is the rule a version
switch follows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from django.db.models import Q

from transcript.models import Message, MessageStatus, Role

Children = dict[UUID | None, list[UUID]]  # parent id (None: the roots) → child ids, oldest first


@dataclass(frozen=True)
class Siblings:
    ids: tuple[UUID, ...]  # oldest first; the message itself among them
    index: int  # 1-based place of the message in `ids`

    @property
    def count(self) -> int:
        return len(self.ids)

    def as_dict(self) -> dict:
        return {"index": self.index, "count": self.count, "ids": [str(pk) for pk in self.ids]}


def children_in(rows: Iterable[Message]) -> Children:
    """Every parent's children among `rows` (the stored prompt left out), oldest first."""
    ordered = sorted((m for m in rows if m.role != Role.SYSTEM), key=lambda m: m.seq)
    children: Children = {}
    for message in ordered:
        children.setdefault(message.parent_id, []).append(message.id)
    return children


def children_read(conversation_id: UUID, parent_ids: Iterable[UUID | None]) -> Children:
    """The children of each of `parent_ids` (None: the conversation's roots), oldest first: one statement.

    A parent with no children is absent from the answer."""
    wanted = set(parent_ids)
    ids = {pk for pk in wanted if pk is not None}
    if not wanted:
        return {}
    which = Q(parent_id__in=ids) if ids else Q(pk__in=[])
    if None in wanted:
        which |= Q(parent__isnull=True)
    # Put in seq order here: asked for an order, a planner without statistics reads the whole thread
    # along the (conversation, seq) index instead of the parents' children by `message_conversation_parent`.
    rows = sorted(
        Message.objects.filter(which, conversation_id=conversation_id)
        .exclude(role=Role.SYSTEM)
        .order_by()
        .values_list("seq", "id", "parent_id")
    )
    children: Children = {}
    for _seq, pk, parent_id in rows:
        children.setdefault(parent_id, []).append(pk)
    return children


def siblings_of(children: Children, message: Message) -> Siblings:
    """`message`'s place among its parent's children. Precondition: `children` holds its parent's
    (from `children_in` or `children_read` over it); a message missing from them stands alone."""
    ids = tuple(children.get(message.parent_id, ()))
    if message.id not in ids:
        return Siblings(ids=(message.id,), index=1)
    return Siblings(ids=ids, index=ids.index(message.id) + 1)


def siblings_for(conversation_id: UUID, messages: Iterable[Message]) -> dict[UUID, Siblings]:
    """Each message's siblings, read in one statement however many messages (none when empty)."""
    messages = list(messages)
    if not messages:
        return {}
    children = children_read(conversation_id, {m.parent_id for m in messages})
    return {m.id: siblings_of(children, m) for m in messages}


def is_head_candidate(message: Message) -> bool:
    """May a switch make `message` the head? A reply that is not streaming: finished, failed or stopped
    (as Retry leaves a failed reply the head, and rewind accepts any finished reply), or a handoff bubble."""
    return message.role == Role.ASSISTANT and message.status != MessageStatus.STREAMING


def switch_head(tree: dict[UUID, Message], target_id: UUID) -> Message | None:
    """The head a switch to `target_id` chooses: the newest (highest seq) end of a conversation under it.

    An end is a reply (`is_head_candidate`) with no reply below it: the newest
    leaf, except that a user turn left without a stored reply is passed over
    for the reply above it, since the head is always a reply the next send
    answers. `target_id` itself counts (a rewound-to reply is its own
    subtree's end when nothing follows it). None when the subtree holds no
    reply at all (a user turn whose reply was never stored).
    Precondition: `tree` holds every row of the subtree under `target_id` (every row from its seq on will do).
    """
    children = children_in(tree.values())
    best: Message | None = None
    # Depth first; a subtree's answer is its newest end, so every message is visited once.
    stack = [target_id]
    ends_below: dict[UUID, bool] = {}
    order: list[UUID] = []
    while stack:
        current = stack.pop()
        order.append(current)
        stack.extend(children.get(current, ()))
    for current in reversed(order):  # children before their parents
        message = tree[current]
        below = any(ends_below[child] for child in children.get(current, ()))
        if is_head_candidate(message) and not below:
            if best is None or message.seq > best.seq:
                best = message
            below = True
        ends_below[current] = below
    return best
