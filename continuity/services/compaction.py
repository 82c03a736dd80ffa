"""The owner's Compact action (seed 004 compaction, the rule in `continuity.rules.compaction`): one provider
call that summarises the live branch up to the head, then the `Compaction` record stored."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from asgiref.sync import async_to_sync
from django.db import transaction

from continuity.models import Compaction
from continuity.rules.compaction import COMPACT_MIN_TURNS, compaction_projection, summary_request
from continuity.rules.labels import assistant_name
from elion.base.assistant_settings import assistant_settings_get
from elion.base.errors import Conflict, NotFound, ServiceError
from transcript.access import access_conversation
from transcript.guard import transcript_write_guard
from transcript.models import Message, MessageStatus, Role
from transcript.provider import gateway as provider_gateway
from transcript.provider.binding import binding_fields, provider_binding_gate
from transcript.provider.gateway import ProviderConfig, ProviderError
from transcript.provider.request_builder import RequestOptions, compaction_request_options
from transcript.tree import is_projectable, walk_to_root


@dataclass(frozen=True)
class _CompactionPlan:
    config: provider_gateway.ProviderConfig
    head_id: UUID
    messages: list[dict]
    covered: int
    options: RequestOptions  # the conversation's settings a summary takes (`compaction_request_options`)


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
        options = compaction_request_options(settings_row, conversation)
    return _CompactionPlan(config=config, head_id=head.id, messages=messages, covered=covered, options=options)


async def _summarise(config: ProviderConfig, messages: list[dict], options: RequestOptions) -> str:
    parts: list[str] = []
    async for event in provider_gateway.stream_reply(config, messages, None, options):
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
        summary = async_to_sync(_summarise)(plan.config, plan.messages, plan.options)
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
