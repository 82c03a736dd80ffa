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

from asgiref.sync import async_to_sync
from django.db import transaction

from continuity.models import Compaction
from continuity.rules.labels import assistant_name
from continuity.rules.prompt_policy import quote_reserved_headings
from continuity.rules.request_policy import estimate_tokens
from elion.base.assistant_settings import assistant_settings_get
from elion.base.errors import Conflict, NotFound, ServiceError
from transcript.access import access_conversation
from transcript.guard import transcript_write_guard
from transcript.models import Conversation, Message, MessageStatus, Role
from transcript.provider import gateway as provider_gateway
from transcript.provider.binding import binding_fields, provider_binding_gate
from transcript.provider.gateway import ProviderConfig, ProviderError
from transcript.tree import is_projectable, walk_to_root

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


@dataclass(frozen=True)
class _CompactionPlan:
    config: provider_gateway.ProviderConfig
    head_id: UUID
    messages: list[dict]
    covered: int


def _plan(conversation_id: UUID | str) -> _CompactionPlan:
    with transaction.atomic():
        conversation = access_conversation(conversation_id, lock=True)
        transcript_write_guard(conversation, action="compact")
        rows = {m.id: m for m in Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)}
        # Provider I/O follows: the full binding tuple is validated first.
        config = provider_binding_gate(rows.values())
        head = rows.get(conversation.head_id)
        if head is None or head.role != Role.ASSISTANT or head.status == MessageStatus.STREAMING:
            raise Conflict("Compact after a finished reply.", code="nothing_to_compact")
        branch = walk_to_root(rows, head.id)
        projection = compaction_projection(conversation, branch)
        if projection.compaction is not None and projection.compaction.through_message_id == head.id:
            raise Conflict("This conversation is already compacted up to its latest reply.", code="already_compacted")
        turns = [m for m in projection.branch_after if is_projectable(m)]
        if len([m for m in branch if is_projectable(m)]) < COMPACT_MIN_TURNS:
            raise Conflict(
                f"Compacting is for long threads: this one has fewer than {COMPACT_MIN_TURNS} turns.",
                code="thread_too_short",
            )
        settings_row = assistant_settings_get()
        previous = projection.compaction.summary if projection.compaction else ""
        messages = summary_request(previous, turns, settings_row.owner_name, assistant_name(conversation.persona, display_name=settings_row.display_name))
        covered = len([m for m in branch if is_projectable(m)])
    return _CompactionPlan(config=config, head_id=head.id, messages=messages, covered=covered)


async def _summarise(config: ProviderConfig, messages: list[dict]) -> str:
    parts: list[str] = []
    async for event in provider_gateway.stream_reply(config, messages, None):
        if isinstance(event, provider_gateway.TextDelta):
            parts.append(event.text)
    return "".join(parts)


def conversation_compact(*, conversation_id: UUID | str) -> Compaction:
    """Summarise the live branch up to the head (one provider call) and store the projection.

    The provider call runs outside any transaction; the record is stored only
    if its boundary is still in the conversation.
    """
    plan = _plan(conversation_id)
    try:
        summary = async_to_sync(_summarise)(plan.config, plan.messages)
    except ProviderError as exc:
        raise ServiceError(f"The summary could not be written: {exc.detail}", code=exc.code, status=502) from exc
    if not summary.strip():
        raise ServiceError("The model returned an empty summary; nothing was compacted.", code="empty_summary",
                           status=502)
    with transaction.atomic():
        conversation = access_conversation(conversation_id, lock=True)
        if not Message.objects.filter(pk=plan.head_id, conversation=conversation).exists():
            raise NotFound("The message the summary covers is gone.", code="message_not_found")
        return Compaction.objects.create(
            conversation=conversation,
            through_message_id=plan.head_id,
            summary=summary.strip(),
            covered_messages=plan.covered,
            **binding_fields(plan.config),
        )


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
