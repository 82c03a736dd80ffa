"""A long thread's history turns, kept between sends and extended by what each send adds.

A send's request carries its branch's projectable turns, trimmed from the
oldest to the input budget (`continuity.rules.request_policy.trim_history`).
Building that list anew means a pass over every message of the branch on
every send, the cost that grew with thread length after the rows themselves
were kept (`transcript.tree_cache`). Here a process keeps, per
conversation, the turns it projected from the last branch read, with their
running token totals, and the next send projects only the messages its read
does not share with that one (`BranchRead.unchanged`). Trimming is then a
binary search over the totals (`continuity.rules.request_policy.trim_start`), and only the turns that fit
are listed.

What may differ between two sends of the same rows is per send and small:
which messages have attachments (their verified parts are built again for
every send, seed 004) and where a compaction's boundary lies. Both are
applied over the kept turns, never baked into them. The result is exactly
the list `trim_history` keeps from the full list (the property test in
`tests/conversations/transcript/test_tree_cache.py` compares the two).
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from itertools import accumulate
from uuid import UUID

from continuity.rules.request_policy import HistoryTurn, trim_start
from conversations.models import Message
from transcript.tool_pairing import project_tool_parts
from transcript.tree import is_projectable
from transcript.tree_cache import BranchRead

KEPT_CONVERSATIONS = 64

_HISTORY_TURN = "_elion_history_turn"


def history_turn_of(message: Message) -> HistoryTurn:
    """The message as a history turn, its attachments aside: built once per row instance.

    Row instances from the tree cache (`transcript.tree_cache`) serve
    send after send, and a row that changes comes back as a new instance, so the
    turn kept on an instance is always the turn of what it holds.
    """
    turn = message.__dict__.get(_HISTORY_TURN)
    if turn is None:
        turn = HistoryTurn(message.role, message.content, tuple(project_tool_parts(message.parts)))
        message.__dict__[_HISTORY_TURN] = turn
    return turn


@dataclass
class _Projected:
    """The turns projected from a branch's first `covered` messages."""

    read_number: int
    lineage: object  # the same object while each projection extends the last one's unchanged part
    covered: int
    with_attachments: dict[UUID, int]  # the messages among them that had attachments when projected: their index
    indices: list[int]  # each turn's index on the branch
    messages: list[Message]
    turns: list[HistoryTurn]  # attachments aside
    texts: list[str]
    totals: list[int]  # totals[i]: the tokens of turns[:i]


_KEPT: OrderedDict[UUID, _Projected] = OrderedDict()
_LOCK = threading.Lock()


@dataclass(frozen=True)
class BranchHistory:
    """A branch's projectable turns after `start_index` (a compaction's boundary + 1, else 0), with
    their attachment parts, ready to be trimmed (`trimmed`) without listing the ones that don't fit."""

    projected: _Projected
    first: int  # turns[first:] are this history
    attached: Mapping[int, HistoryTurn]  # by turn position: the turn with its attachment parts
    # Every turn's text, oldest first (what the request already carries, for recall's overlap check).
    texts: list[str]
    # The same while each send's `texts` begin with the last one's: they only grow at the end.
    lineage: tuple[object, int]

    def __len__(self) -> int:
        return len(self.projected.turns) - self.first

    def turns(self) -> list[HistoryTurn]:
        """Every turn, oldest first (the whole list `trimmed` avoids building)."""
        return [self._turn(i) for i in range(self.first, len(self.projected.turns))]

    def _turn(self, position: int) -> HistoryTurn:
        return self.attached.get(position) or self.projected.turns[position]

    def _tokens_from(self, position: int) -> int:
        """Tokens of turns[position:] with their attachments."""
        projected = self.projected
        extra = sum(turn.tokens - projected.turns[at].tokens for at, turn in self.attached.items() if at >= position)
        return projected.totals[-1] - projected.totals[position] + extra

    def trimmed(self, budget_tokens: int, step_tokens: int = 0) -> tuple[list[HistoryTurn], int, int]:
        """`trim_history` of `turns()`: the kept turns, how many were dropped, and the kept turns' tokens."""
        end = len(self.projected.turns)
        if end == self.first:
            return [], 0, 0
        whole = self._tokens_from(self.first)
        start = self.first + trim_start(
            end - self.first,
            lambda at: whole - self._tokens_from(self.first + at),
            lambda at: self._turn(self.first + at).role != "assistant",
            budget_tokens,
            step_tokens,
        )
        return [self._turn(i) for i in range(start, end)], start - self.first, self._tokens_from(start)

    def message_at(self, position: int) -> Message:
        """The message of the history's turn at `position` (0: its first turn)."""
        return self.projected.messages[self.first + position]


def branch_history(
    conversation_id: UUID,
    read: BranchRead,
    *,
    attachment_parts: Mapping[UUID, tuple[dict, ...]],
    start_index: int = 0,
) -> BranchHistory:
    """The projectable turns of `read.messages[start_index:]`, with `attachment_parts` (by message id) on theirs.

    Extends what was kept from the read `read` follows when that one's messages are still its first ones and
    had attachments exactly where they have them now; otherwise projects the branch afresh.
    """
    with _LOCK:
        kept = _KEPT.get(conversation_id)
    attached_ids = frozenset(attachment_parts)
    if kept is not None and kept.read_number == read.follows:
        kept = _cut(kept, read.unchanged)  # the part of the branch this read shares with the last one
        if not _same_attachments(kept, attached_ids, read):
            kept = None
    else:
        kept = None
    projected = _extend(kept or _Projected(0, object(), 0, {}, [], [], [], [], [0]), read, attached_ids)
    with _LOCK:
        _KEPT[conversation_id] = projected
        _KEPT.move_to_end(conversation_id)
        while len(_KEPT) > KEPT_CONVERSATIONS:
            _KEPT.popitem(last=False)
    first = bisect_left(projected.indices, start_index)
    attached = {
        position: replace(projected.turns[position], attachments=attachment_parts[message.id])
        for message_id in attachment_parts
        if (index := read.positions.get(message_id)) is not None
        and (position := _position_of(projected, index)) is not None
        and position >= first
        and (message := projected.messages[position]).id == message_id
    }
    return BranchHistory(projected, first, attached, projected.texts[first:], (projected.lineage, first))


def _cut(kept: _Projected, covered: int) -> _Projected:
    """`kept` as far as the branch's first `covered` messages (a reply finished since, or a retry or rewind,
    changes only what follows them). The lineage goes on only when nothing is cut: texts only ever grow."""
    if covered >= kept.covered:
        return kept
    keep = bisect_left(kept.indices, covered)
    return _Projected(
        kept.read_number, object(), covered, {pk: i for pk, i in kept.with_attachments.items() if i < covered},
        kept.indices[:keep], kept.messages[:keep], kept.turns[:keep], kept.texts[:keep], kept.totals[: keep + 1],
    )


def _same_attachments(kept: _Projected, attached_ids: frozenset[UUID], read: BranchRead) -> bool:
    """Do the kept messages have attachments where they had them? (An empty text turn is history only with
    them.)"""
    now = {pk: index for pk in attached_ids if (index := read.positions.get(pk, kept.covered)) < kept.covered}
    return now == kept.with_attachments


def _position_of(projected: _Projected, index: int) -> int | None:
    position = bisect_left(projected.indices, index)
    if position < len(projected.indices) and projected.indices[position] == index:
        return position
    return None


def _extend(kept: _Projected, read: BranchRead, attached_ids: frozenset[UUID]) -> _Projected:
    """`kept` (covering the branch's first `kept.covered` messages) extended to the whole of `read`.

    The kept lists are copied, not changed: another thread may still read them.
    """
    keep = len(kept.turns)
    indices, messages, turns, texts = list(kept.indices), list(kept.messages), list(kept.turns), list(kept.texts)
    for index in range(kept.covered, len(read.messages)):
        message = read.messages[index]
        if not is_projectable(message, has_attachments=message.id in attached_ids):
            continue
        turn = history_turn_of(message)
        indices.append(index)
        messages.append(message)
        turns.append(turn)
        texts.append(turn.content)
    totals = kept.totals + list(accumulate((turn.tokens for turn in turns[keep:]), initial=kept.totals[-1]))[1:]
    added = {pk: index for pk in attached_ids if kept.covered <= (index := read.positions.get(pk, -1))}
    return _Projected(
        read.read_number, kept.lineage, len(read.messages), {**kept.with_attachments, **added}, indices, messages,
        turns, texts, totals,
    )


def kept_history_clear() -> None:
    """Forget every kept history (tests)."""
    with _LOCK:
        _KEPT.clear()
