"""Compaction as a projection (seed 004: "derived summaries reduce active context
without destroying the authoritative event history or tool pairing evidence").

The owner's Compact action asks the model, once, through the provider gateway
and with its own instruction, to summarise the live branch up to the head. The
summary is stored as a `Compaction` with an explicit boundary
(`through_message`). From then on a request for a reply carries the summary,
labelled, plus the turns after the boundary; the stored messages, their ids
and their tool pairing are never touched. The boundary applies only while it
lies on the branch being answered (an ancestor of the head): rewinding or
editing before it makes the request ignore it. Undo deletes the record.

Summaries are model-written, so they never feed automatic continuity: they
are not messages, so handoff capture, keyword recall, Past Conversation
Search and the archive cannot read them (see `continuity.rules.eligibility`), and
wherever they are shown they are labelled "Compacted summary".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from uuid import UUID

from django.db import transaction

from continuity.models import Compaction
from continuity.rules.prompt_policy import quote_reserved_headings
from continuity.rules.request_policy import estimate_tokens
from elion.base.errors import NotFound
from transcript.access import access_conversation
from transcript.models import Conversation, Message, Role
from transcript.tree import walk_to_root

# A thread is "long" enough to compact once its live branch holds this many turns.
COMPACT_MIN_TURNS = 6
SUMMARY_LABEL = "Compacted summary"
SUMMARY_HEADING = "=== COMPACTED SUMMARY ==="
SUMMARY_INSTRUCTION = (
    "You compact a conversation so it can continue with less context. Write a faithful, neutral summary of the "
    "conversation below: the facts, names, decisions, open questions and commitments a reader needs to carry "
    "it on, and the tone between the speakers. Do not invent anything, do not address anyone, and do not add "
    "advice. Write plain prose or short bullet points, at most about 400 words."
)


# --- Pure parts ---------------------------------------------------------------------


def summary_system_text(summary: str) -> str:
    """How the summary travels in a request: a labelled system message, never user speech."""
    return (
        f"{SUMMARY_HEADING}\n"
        "A model-written summary of the earlier part of this conversation, standing in for the turns it "
        "covers; the turns after it follow verbatim. It is a summary, not anyone's own words.\n\n"
        f"{quote_reserved_headings(summary.strip())}"
    )


def applicable_compaction(
    compactions: list[Compaction], positions: Mapping[UUID, int]
) -> tuple[Compaction, int] | None:
    """The newest compaction whose boundary lies on a branch, with the boundary's index; else None.

    `positions`: the branch's message ids → their index, root first. A
    boundary off the branch (rewound or edited away) does not apply.
    """
    for compaction in sorted(compactions, key=lambda c: -c.pk):
        index = positions.get(compaction.through_message_id)
        if index is not None:
            return compaction, index
    return None


def summary_request(previous_summary: str, turns: list[Message], owner: str, assistant: str) -> list[dict]:
    """The compaction request: its own instruction, then the text to summarise."""
    lines = []
    if previous_summary:
        lines.append(f"[Summary of the part before this]\n{previous_summary.strip()}\n")
    for message in turns:
        speaker = owner if message.role == Role.USER else assistant
        lines.append(f"{speaker}: {message.content.strip()}")
    return [
        {"role": "system", "content": SUMMARY_INSTRUCTION},
        {"role": "user", "content": "\n\n".join(lines)},
    ]


# --- The projection a reply request uses ----------------------------------------------


@dataclass(frozen=True)
class CompactionProjection:
    summary_text: str  # the labelled system text, "" when no compaction applies
    branch_after: list[Message]  # the branch turns the request carries verbatim
    compaction: Compaction | None = None


def compaction_projection(conversation: Conversation, branch: list[Message]) -> CompactionProjection:
    """What a reply request carries of `branch`: all of it, or a summary plus the turns after its boundary."""
    found = compaction_on_branch(conversation, {message.id: index for index, message in enumerate(branch)})
    return CompactionProjection(found.summary_text, branch[found.first_index:], found.compaction)


@dataclass(frozen=True)
class CompactionOnBranch:
    summary_text: str  # the labelled system text, "" when no compaction applies
    first_index: int  # the branch index of the first turn the request carries verbatim
    compaction: Compaction | None = None


def compaction_on_branch(conversation: Conversation, positions: Mapping[UUID, int]) -> CompactionOnBranch:
    """`compaction_projection` for a branch given by its positions (id → index): where its verbatim part starts."""
    # By id alone: the model's ordering starts with the conversation, which joins it to sort by its updated_at.
    compactions = list(
        Compaction.objects.filter(conversation=conversation).order_by("-id").only("id", "through_message_id", "summary")
    )
    found = applicable_compaction(compactions, positions) if compactions else None
    if found is None:
        return CompactionOnBranch("", 0)
    compaction, index = found
    return CompactionOnBranch(summary_system_text(compaction.summary), index + 1, compaction)


# --- Services ---------------------------------------------------------------------------


@transaction.atomic
def conversation_compaction_undo(*, conversation_id: UUID | str) -> int:
    """Remove the compaction that applies to the head (the projection); the history was never touched."""
    conversation = access_conversation(conversation_id, lock=True)
    current = compaction_for_head(conversation)
    if current is None:
        raise NotFound("Nothing is compacted on this conversation's current branch.", code="compaction_not_found")
    current.delete()
    return 1


def compaction_for_head(conversation: Conversation) -> Compaction | None:
    """The compaction a request from the current head would use, if any."""
    if conversation.head_id is None:
        return None
    rows = {m.id: m for m in Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)
            .only("id", "parent_id", "seq", "conversation_id")}
    if conversation.head_id not in rows:
        return None
    return compaction_projection(conversation, walk_to_root(rows, conversation.head_id)).compaction


def compaction_repr(compaction: Compaction | None) -> dict | None:
    if compaction is None:
        return None

    return {
        "id": compaction.pk,
        "label": SUMMARY_LABEL,
        "through_message_id": str(compaction.through_message_id),
        "summary": compaction.summary,
        "covered_messages": compaction.covered_messages,
        "summary_tokens": estimate_tokens(summary_system_text(compaction.summary)),
        "provider": {"id": compaction.provider_id, "type": compaction.provider_type, "model": compaction.model},
        "created_at": compaction.created_at.isoformat(),
    }
