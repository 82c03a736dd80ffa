"""Turning stored rows into a provider request: a pure function of plain data.

Inputs are the stored static prompt, the live branch (already walked from the
conversation's head) and the fresh dynamic context. The output is the neutral
message list the provider gateway understands, plus the numbers the Request
size details view reports. Nothing here touches the database, so the same rows
always give the same request.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Protocol

# Django's, not functools': it takes no lock (Python 3.11's does), and a send computes one for each of its
# window's ~2,000 turns.
from django.utils.functional import cached_property

from continuity.rules.recall_policy import contains_recall_section
from transcript.provider.wire import OUTPUT_ITEM_ROLE, REASONING_ROLE, output_message_text

ESTIMATE_METHOD = "chars_div_4"


def estimate_tokens(text: str) -> int:
    """App estimate, not a provider count: about four characters a token."""
    return math.ceil(len(text) / 4) if text else 0


@dataclass(frozen=True)
class HistoryTurn:
    role: str  # "user" | "assistant"
    content: str
    # Tool rounds that preceded this assistant turn's text, as neutral request
    # messages, already paired (transcript.tool_pairing.project_tool_parts).
    # They travel and are trimmed with their turn, never apart from it.
    tool_messages: tuple[dict, ...] = ()
    # The turn's verified attachment manifest as neutral content parts, in
    # manifest order (transcript.attachments.projection.attachment_parts_verified).
    attachments: tuple[dict, ...] = ()

    @cached_property
    def tokens(self) -> int:
        """The turn's estimate (`turn_tokens`), counted once: a turn is trimmed and totalled on every send."""
        return _turn_tokens_counted(self)

    @cached_property
    def messages(self) -> tuple[dict, ...]:
        """The turn's request messages: its tool rounds, then its text (`turn_content`). Built once: a kept
        turn goes into its request, which reads them and never
        changes them. A reply whose output messages were kept verbatim goes back as those items, in place
        (`replayed_turn_messages`)."""
        return replayed_turn_messages(self.tool_messages, self.role, turn_content(self))

    @cached_property
    def messages_without_reasoning(self) -> tuple[dict, ...]:
        """`messages` without the turn's reasoning items: how a turn before the last user message travels
        when earlier reasoning is not carried (`assemble_request`, docs/provider.md)."""
        if not any(m["role"] == REASONING_ROLE for m in self.tool_messages):
            return self.messages
        return tuple(m for m in self.messages if m["role"] != REASONING_ROLE)


def _is_output_message(message: dict) -> bool:
    return message["role"] == OUTPUT_ITEM_ROLE and message["item"].get("type") == "message"


def replayed_turn_messages(tool_messages: tuple[dict, ...], role: str, content: str | list[dict]) -> tuple[dict, ...]:
    """A turn's request messages. Rows stored before output items were kept, and replies whose text the
    items don't hold (a reply stopped mid-message), go as today: the tool rounds, then the text as one
    message. When the reply's output messages hold its text (in order: preamble, then answer), they are the
    reply, each with its `phase`; text the items miss at the end follows them as one message."""
    said = "".join(output_message_text(m["item"]) for m in tool_messages if _is_output_message(m))
    if not said or not isinstance(content, str) or not content.startswith(said):
        kept = tuple(m for m in tool_messages if not _is_output_message(m)) if said else tool_messages
        return (*kept, {"role": role, "content": content})
    rest = content[len(said):]
    return (*tool_messages, {"role": role, "content": rest}) if rest.strip() else tool_messages


IMAGE_TOKEN_ESTIMATE = 765  # one high-detail 1024x1024 image, the providers' usual figure


def attachment_tokens(parts: tuple[dict, ...]) -> int:
    return sum(IMAGE_TOKEN_ESTIMATE if part["type"] == "image" else estimate_tokens(part["text"]) for part in parts)


def turn_tokens(turn: HistoryTurn) -> int:
    return turn.tokens


def _turn_tokens_counted(turn: HistoryTurn) -> int:
    # Carried reasoning items are opaque and the provider keeps only those it needs, so they are not estimated.
    # An output message's words are the turn's content, counted there.
    tools = sum(
        estimate_tokens(json.dumps(message, separators=(",", ":")))
        for message in turn.tool_messages
        if message["role"] != REASONING_ROLE and not _is_output_message(message)
    )
    return estimate_tokens(turn.content) + tools + attachment_tokens(turn.attachments)


def turn_content(turn: HistoryTurn) -> str | list[dict]:
    """Plain text, or (with attachments) the text part followed by the manifest's parts in order."""
    if not turn.attachments:
        return turn.content
    text = [{"type": "text", "text": turn.content}] if turn.content else []
    return [*text, *turn.attachments]


@dataclass(frozen=True)
class AssembledRequest:
    messages: list[dict]
    diagnostics: dict = field(default_factory=dict)
    # The position in the history (as given, after any compaction) of the first turn the request carries.
    history_start: int = 0
    # Where the model's view of the branch begins (`continuity.rules.request_store.in_view_of`), once known.
    in_view: dict | None = None


class RecallInBirthPeriod(Exception):
    """An opening (birth-period) request carries an actual automatic-recall section.

    Raised by final request assembly instead of returning a request, so it can
    never reach any provider path (seed: "final opening request assembly
    rejects an actual dynamic === AUTO-RECALLED CONTEXT === section"). It
    means a bug upstream: the recall layer never runs in the birth period.
    """


def trim_history(
    turns: list[HistoryTurn], budget_tokens: int, step_tokens: int = 0
) -> tuple[list[HistoryTurn], int]:
    """Drop the oldest turns until the history fits; the newest turn always stays.

    `step_tokens` 0 drops just enough; more cuts back to a point of the trim chain (`trim_start`).
    Returns the kept turns and how many were dropped.
    """
    totals = list(accumulate((turn_tokens(turn) for turn in turns), initial=0))
    first = trim_start(totals, [turn.role != "assistant" for turn in turns], budget_tokens, step_tokens)
    return list(turns[first:]), first


def trim_start(
    before: Sequence[int],
    opens: Sequence[bool],
    budget_tokens: int,
    step_tokens: int = 0,
    *,
    chain: Sequence[int] | None = None,
    anchor: int = 0,
) -> int:
    """Where a trimmed history starts: the first of its turns it keeps (the last one always stays).

    `before[p]`: the tokens of the turns before turn p (`before[-1]` is the whole history's);
    `opens[p]`: may the history open on turn p (not on an assistant turn: a reply with no question)?
    `chain[p]`: the stored measure before turn p that fixes the trim chain (`transcript.append`;
    `before` itself for a plain list), `anchor` its value where the history starts.

    Nothing is dropped unless the history exceeds `budget_tokens`. Step 0 drops just enough: the first
    turn that may open from which the rest fits. A positive step keeps a prompt cache past the budget:
    the cut may only fall on the trim chain (`_on_trim_chain`), positions fixed by the rows alone and
    each decided by its neighbours, so a send that reads only the newest part of its branch finds the
    same chain as one that reads it all. The cut is the first chain point at or after step 0's, so the
    same rows give the same start until the history from there no longer fits, and a cut keeps at
    least `budget_tokens - step_tokens` unless step 0 would keep less itself (past a turn longer than
    half the step).
    """
    count = len(opens)
    if count == 0:
        return 0
    last = count - 1
    whole = before[count]
    openings = [p for p in range(count) if opens[p]]
    minimal = next((p for p in openings if whole - before[p] <= budget_tokens), last)
    if step_tokens <= 0 or minimal == last:
        return minimal
    chain = before if chain is None else chain
    cell = max(step_tokens // 2, 1)
    for index, p in enumerate(openings):
        if p >= minimal and _on_trim_chain([chain[at] for at in openings[max(index - 1, 0):index + 2]],
                                           index, cell, anchor):
            return p
    return last


def _on_trim_chain(near: list[int], index: int, cell: int, anchor: int) -> bool:
    """Is an opening turn a point of the trim chain? `near`: the chain measures of the opening turns before
    it, itself and after it (as many as there are), `index` its place among all opening turns. The
    history's first opening turn is a point; any other is when the chain measure crossed a multiple of
    `cell` (half the step) since the opening turn before it, or when the next opening turn lies more
    than `cell` beyond it. Consecutive points then lie less than a step apart, except across a turn
    longer than `cell`, which the minimal cut skips too."""
    if index == 0:
        return True
    before, here = near[0], near[1]
    if (here - anchor) // cell > (before - anchor) // cell:
        return True
    return len(near) > 2 and near[2] - here > cell


class TrimmableHistory(Protocol):
    """History turns that can be trimmed to a budget (`continuity.rules.history_window`)."""

    def trimmed(self, budget_tokens: int, step_tokens: int = 0) -> tuple[list[HistoryTurn], int, int]:
        """`trim_history` of every turn: the kept turns, how many were dropped, and the kept turns' tokens."""
        ...


@dataclass(frozen=True)
class ListedHistory:
    """History turns as a plain list (`TrimmableHistory`)."""

    turns: list[HistoryTurn]

    def trimmed(self, budget_tokens: int, step_tokens: int = 0) -> tuple[list[HistoryTurn], int, int]:
        kept, dropped = trim_history(self.turns, budget_tokens, step_tokens)
        return kept, dropped, sum(turn_tokens(turn) for turn in kept)


def assemble_request(
    *,
    static_prompt: str,
    history: list[HistoryTurn] | TrimmableHistory,
    dynamic_context: str = "",
    handoff_text: str = "",
    tool_definitions_text: str = "",
    input_budget_tokens: int,
    trim_step_tokens: int = 0,
    birth_period: bool = False,
    compacted_summary: str = "",
    earlier_reasoning: bool = True,
) -> AssembledRequest:
    """Build the model input: stored prompt, trimmed history, dynamic context.

    `handoff_text` is the part of the static prompt that came from a prior
    thread; it is counted as a subcategory, never added twice. In the
    `birth_period` (no ordinary assistant reply yet) a request whose system
    messages carry an actual recall section raises `RecallInBirthPeriod`.
    `compacted_summary` (the labelled text of a compaction, `continuity.rules.compaction`)
    stands in for the history before its boundary: it follows the static
    prompt, is never trimmed, and counts as history in the diagnostics.
    `trim_step_tokens`: how far back a trim may cut past what the budget needs (`trim_start`).
    `earlier_reasoning`: do the history turns (all before the last user message) carry their reasoning
    items? GPT-5.5 renders only the current turn's (`reasoning.context` "current_turn"), docs/provider.md.
    """
    static_tokens = estimate_tokens(static_prompt)
    dynamic_tokens = estimate_tokens(dynamic_context)
    tool_tokens = estimate_tokens(tool_definitions_text)
    summary_tokens = estimate_tokens(compacted_summary)
    history_budget = max(input_budget_tokens - static_tokens - dynamic_tokens - tool_tokens - summary_tokens, 0)
    if isinstance(history, list):
        history = ListedHistory(history)
    kept, trimmed, kept_tokens = history.trimmed(history_budget, trim_step_tokens)
    history_tokens = kept_tokens + summary_tokens

    messages: list[dict] = []
    if static_prompt:
        messages.append({"role": "system", "content": static_prompt})
    if compacted_summary:
        messages.append({"role": "system", "content": compacted_summary})
    for turn in kept:
        messages.extend(turn.messages if earlier_reasoning else turn.messages_without_reasoning)
    # Dynamic context, fresh for each send, comes last, right after the current
    # message, and is omitted entirely when empty: everything before it is
    # what the previous send sent plus the turns since, byte for byte, so the
    # provider's prompt cache can serve that prefix (tests: `test_cache_friendly_*`).
    if dynamic_context:
        messages.append({"role": "system", "content": dynamic_context})
    if birth_period and any(
        message["role"] == "system" and contains_recall_section(message["content"]) for message in messages
    ):
        raise RecallInBirthPeriod("an opening request carries an automatic recall section")

    total = static_tokens + history_tokens + dynamic_tokens + tool_tokens
    diagnostics = {
        "history_tokens": history_tokens,
        "static_prompt_tokens": static_tokens,
        "handoff_tokens": estimate_tokens(handoff_text),
        "handoff_included_in_static": True,
        "dynamic_context_tokens": dynamic_tokens,
        "tool_definition_tokens": tool_tokens,
        "total_input_tokens": total,
        "input_budget_tokens": input_budget_tokens,
        "remaining_tokens": max(input_budget_tokens - total, 0),
        "trimmed_messages": trimmed,
        "estimate_method": ESTIMATE_METHOD,
    }
    return AssembledRequest(messages=messages, diagnostics=diagnostics, history_start=trimmed)


def tool_definitions_text(tools: list[dict]) -> str:
    """What the definitions cost in the request (the `tool_definition_tokens` diagnostic)."""
    return json.dumps(tools, separators=(",", ":")) if tools else ""
