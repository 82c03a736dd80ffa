"""The history turns a send's request can carry: projected from the newest stretch of the branch only.

A request carries its branch's projectable turns, trimmed from the oldest to
the input budget (`continuity.rules.request_policy.trim_start`). A send reads
only the stretch of its branch that can be in view (`transcript.branch_rows`),
found by the stored token measure every message carries
(`transcript.append`); this projects that stretch and trims it. The
trim chain is fixed by the stored measures, so the stretch gives the same cut
as the whole branch would: a stretch is enough once the turns from its first
opening turn no longer fit (`conclusive`), or it starts where the history does.

Nothing is kept between sends: the turns are projected from the rows read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import accumulate
from uuid import UUID

from continuity.rules.request_policy import HistoryTurn, trim_start
from conversations.models import Message
from transcript.append import stored_turn_tokens
from transcript.tool_pairing import project_tool_parts
from transcript.tree import is_projectable


def history_turn_of(message: Message, attachments: tuple[dict, ...] = ()) -> HistoryTurn:
    """The message as a history turn, with its attachment parts."""
    return HistoryTurn(message.role, message.content, tuple(project_tool_parts(message.parts)), attachments)


@dataclass(frozen=True)
class HistoryWindow:
    """The projectable turns of a stretch of the branch after the history's start (a compaction's boundary,
    else the root), oldest first, ready to be trimmed (`TrimmableHistory`).

    `anchor`: the stored measure where the history starts. `start_depth`: the branch depth of the history's
    first message, so a trim reports how many branch messages it left above the first kept one.
    """

    messages: list[Message]
    turns: list[HistoryTurn]
    anchor: int
    start_depth: int
    reaches_start: bool

    def __len__(self) -> int:
        return len(self.turns)

    @property
    def texts(self) -> list[str]:
        return [turn.content for turn in self.turns]

    def _totals(self) -> list[int]:
        totals = self.__dict__.get("_token_totals")
        if totals is None:
            totals = list(accumulate((turn.tokens for turn in self.turns), initial=0))
            object.__setattr__(self, "_token_totals", totals)
        return totals

    def conclusive(self, budget_tokens: int) -> bool:
        """Does this stretch decide the trim for any budget up to `budget_tokens`: it starts where the history
        does, or the turns from its first opening turn already exceed the budget."""
        if self.reaches_start or not self.turns:
            return self.reaches_start
        first_opening = next((i for i, turn in enumerate(self.turns) if turn.role != "assistant"), None)
        if first_opening is None:
            return False
        totals = self._totals()
        return totals[-1] - totals[first_opening] > budget_tokens

    def start_for(self, budget_tokens: int, step_tokens: int = 0) -> int:
        """The position of the first kept turn (`trim_start` over the stretch, its chain by stored measures)."""
        totals = self._totals()
        return trim_start(
            len(self.turns),
            totals.__getitem__,
            lambda at: self.turns[at].role != "assistant",
            budget_tokens,
            step_tokens,
            chain=lambda at: self.messages[at].branch_tokens - _own_measure(self.messages[at]),
            anchor=self.anchor,
        )

    def trimmed(self, budget_tokens: int, step_tokens: int = 0) -> tuple[list[HistoryTurn], int, int]:
        """The kept turns, how many branch messages of the history lie above the first of them, and their
        tokens."""
        if not self.turns:
            return [], 0, 0
        start = self.start_for(budget_tokens, step_tokens)
        totals = self._totals()
        dropped = self.messages[start].branch_depth - self.start_depth
        return self.turns[start:], dropped, totals[-1] - totals[start]

    def first_kept(self, dropped: int) -> Message | None:
        """The message of the first kept turn of a trim that left `dropped` messages above it."""
        depth = self.start_depth + dropped
        return next((message for message in self.messages if message.branch_depth == depth), None)


def _own_measure(message: Message) -> int:
    return stored_turn_tokens(message.role, message.kind, message.content)


def history_window(
    stretch: list[Message],
    *,
    attachment_parts: Mapping[UUID, tuple[dict, ...]],
    start_depth: int,
    anchor: int,
    reaches_start: bool,
) -> HistoryWindow:
    """The projectable turns of `stretch` (oldest first) from depth `start_depth` on, with their attachment
    parts."""
    messages: list[Message] = []
    turns: list[HistoryTurn] = []
    for message in stretch:
        if message.branch_depth < start_depth:
            continue
        parts = attachment_parts.get(message.id, ())
        if not is_projectable(message, has_attachments=bool(parts)):
            continue
        messages.append(message)
        turns.append(history_turn_of(message, parts))
    return HistoryWindow(messages, turns, anchor, start_depth, reaches_start)

