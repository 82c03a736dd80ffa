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

from continuity.rules.app_events import request_text_of
from continuity.rules.request_policy import HistoryTurn, trim_start
from transcript.models import Message
from transcript.models.messages import APP_EVENT_KINDS, stored_turn_tokens
from transcript.tool_pairing import project_tool_parts
from transcript.tree import is_projectable


def history_turn_of(message: Message, attachments: tuple[dict, ...] = ()) -> HistoryTurn:
    """The message as a history turn, with its attachment parts (an app event framed for what it is)."""
    text = request_text_of(message) if message.kind in APP_EVENT_KINDS else message.content
    return HistoryTurn(message.role, text, tuple(project_tool_parts(message.parts)), attachments)


@dataclass(frozen=True)
class HistoryWindow:
    """The projectable turns of a stretch of the branch after the history's start (a compaction's boundary,
    else the root), oldest first, ready to be trimmed (`TrimmableHistory`), as plain data.

    `totals[p]`: the turns' tokens before turn p; `chain[p]`: the stored measure before it (its parent's
    `branch_tokens`), which fixes the trim chain; `anchor`: the stored measure where the history starts;
    `start_depth`: the branch depth of the history's first message, so a trim reports how many branch
    messages it left above the first kept one. `conclusive`: the stretch decides the trim for any history
    budget up to the one it was projected for: it starts where the history does, or the turns from its
    first opening turn already exceed that budget.
    """

    messages: list[Message]
    turns: list[HistoryTurn]
    texts: list[str]
    totals: list[int]
    opens: list[bool]
    chain: list[int]
    anchor: int
    start_depth: int
    conclusive: bool

    def __len__(self) -> int:
        return len(self.turns)

    def trimmed(self, budget_tokens: int, step_tokens: int = 0) -> tuple[list[HistoryTurn], int, int]:
        """The kept turns, how many branch messages of the history lie above the first of them, and their
        tokens."""
        if not self.turns:
            return [], 0, 0
        start = trim_start(self.totals, self.opens, budget_tokens, step_tokens, chain=self.chain, anchor=self.anchor)
        dropped = self.messages[start].branch_depth - self.start_depth
        return self.turns[start:], dropped, self.totals[-1] - self.totals[start]

    def first_kept(self, dropped: int) -> Message | None:
        """The message of the first kept turn of a trim that left `dropped` messages above it."""
        depth = self.start_depth + dropped
        return next((message for message in self.messages if message.branch_depth == depth), None)


def history_window(
    stretch: list[Message],
    *,
    attachment_parts: Mapping[UUID, tuple[dict, ...]],
    start_depth: int,
    anchor: int,
    reaches_start: bool,
    budget_tokens: int,
) -> HistoryWindow:
    """The projectable turns of `stretch` (oldest first) from depth `start_depth` on, with their attachment
    parts; whether they decide the trim for `budget_tokens` (`HistoryWindow.conclusive`)."""
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
    totals = list(accumulate((turn.tokens for turn in turns), initial=0))
    opens = [turn.role != "assistant" for turn in turns]
    chain = [m.branch_tokens - stored_turn_tokens(m.role, m.content, m.kind) for m in messages]
    first_opening = next((p for p, opening in enumerate(opens) if opening), None)
    conclusive = reaches_start or (
        first_opening is not None and totals[-1] - totals[first_opening] > budget_tokens
    )
    return HistoryWindow(
        messages, turns, [turn.content for turn in turns], totals, opens, chain, anchor, start_depth, conclusive
    )
