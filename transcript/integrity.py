"""Checking and repairing the stored transcript's invariants (seed 004).

`transcript_problems` reports every broken invariant of one conversation;
`transcript_repair` fixes what can be fixed without guessing:

* a reply left `streaming` past its lease becomes `interrupted` (text kept);
* a tool call left without a result (the process died mid-tool) gets a
  synthetic error result, stored as a `tool_result` part marked
  `"synthetic": true`;
* a head outside the conversation (or pointing at nothing) moves to the
  newest message whose path to the root is sound.

A parent that is missing, in another conversation, or not below its child
in `seq` is reported, never rewritten: choosing a new parent would invent
history. `manage.py check_transcripts [--repair]` is the command.

Interrupted tool calls: the synthetic result is **persisted** by the stale
stream sweep (`tool_pairing.interrupted_tool_calls_close`, called from
`transcript.leases.streams_interrupt_expired`) and by this repair, so the stored
transcript itself says which results the app wrote and the chat page can show
it. The projection (`tool_pairing.project_tool_parts`) still pairs any call it
finds unpaired with the very same text, so a request is a pure function of
stored rows and is well paired even before a sweep ran.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from transcript.leases import streams_interrupt_expired
from transcript.models import Conversation, Message, MessageStatus, Role
from transcript.tool_pairing import interrupted_tool_calls_close, unpaired_call_ids
from transcript.tree import BrokenTree, tree_break, walk_to_root

# --- Invariants ---------------------------------------------------------------------


@dataclass(frozen=True)
class TranscriptProblem:
    conversation_id: UUID
    kind: str  # orphan_parent | foreign_parent | parent_seq | head_outside | head_path | unpaired_tool_call | stale_stream
    message_id: UUID | None
    detail: str
    repairable: bool

    def __str__(self) -> str:
        return f"{self.conversation_id} {self.kind}: {self.detail}"


def transcript_problems(conversation: Conversation, *, now: datetime | None = None) -> list[TranscriptProblem]:
    """Every broken invariant of one conversation's stored transcript (empty when sound)."""
    now = now or timezone.now()
    cid = conversation.id
    rows = {m.id: m for m in Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)}
    problems: list[TranscriptProblem] = []

    def add(kind: str, message_id: UUID | None, detail: str, repairable: bool = False) -> None:
        problems.append(TranscriptProblem(cid, kind, message_id, detail, repairable))

    outside_parent_ids = {m.parent_id for m in rows.values() if m.parent_id and m.parent_id not in rows}
    outside = {m.id: m for m in Message.objects.filter(pk__in=outside_parent_ids).only("id", "parent", "seq", "conversation")}
    for message in rows.values():
        if message.parent_id is not None:
            broken = tree_break(message, rows.get(message.parent_id) or outside.get(message.parent_id))
            if broken is not None:
                add(broken.kind, message.id, broken.detail)
    if conversation.head_id is not None:
        if conversation.head_id not in rows:
            add("head_outside", None, f"head {conversation.head_id} is not a message of this conversation", True)
        else:
            broken = _path_break(rows, conversation.head_id)
            if broken:
                add("head_path", conversation.head_id, f"the walk from the head breaks: {broken}")
    for message in rows.values():
        if message.status == MessageStatus.STREAMING:
            if message.lease_expires_at is None or message.lease_expires_at <= now:
                add("stale_stream", message.id, f"message {message.id} is still streaming past its lease", True)
            continue  # a live stream may still store its results
        for call_id in unpaired_call_ids(message.parts):
            add("unpaired_tool_call", message.id, f"message {message.id} has tool call {call_id} without a result",
                True)
    return problems


def _path_break(rows: dict[UUID, Message], tip: UUID) -> str:
    """Why the walk from `tip` cannot reach the root (`transcript.tree.walk_to_root`), or "" when it can."""
    try:
        walk_to_root(rows, tip)
    except BrokenTree as broken:
        return broken.step.detail
    return ""


def transcript_repair(conversation_id: UUID) -> list[TranscriptProblem]:
    """Fix the repairable problems of one conversation; returns what was fixed."""
    with transaction.atomic():
        conversation = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
        if conversation is None:
            return []
        found = [p for p in transcript_problems(conversation) if p.repairable]
        if any(p.kind == "stale_stream" for p in found):
            # A stream with no lease at all is as dead as one whose lease ran out.
            Message.objects.filter(
                conversation=conversation, status=MessageStatus.STREAMING, lease_expires_at__isnull=True
            ).update(lease_expires_at=timezone.now())
            streams_interrupt_expired(conversation)
        unpaired = {p.message_id for p in found if p.kind in ("unpaired_tool_call", "stale_stream")}
        interrupted_tool_calls_close(unpaired)
        if any(p.kind == "head_outside" for p in found):
            conversation.head_id = _sound_tip(conversation)
            conversation.save(update_fields=["head", "updated_at"])
    return found


def _sound_tip(conversation: Conversation) -> UUID | None:
    """The newest finished message whose walk to the root is sound (a safe head)."""
    rows = {m.id: m for m in Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)}
    for message in sorted(rows.values(), key=lambda m: -m.seq):
        # `rows` holds only this conversation's messages, so a sound walk stays inside it.
        if message.status != MessageStatus.STREAMING and not _path_break(rows, message.id):
            return message.id
    return None


def transcripts_check(*, conversation_ids: Iterable[UUID] | None = None, repair: bool = False) -> tuple[list[TranscriptProblem], list]:
    """Check (and with `repair`, fix) conversations; returns (fixed, remaining)."""
    queryset = Conversation.objects.all().order_by("created_at", "id")
    if conversation_ids is not None:
        queryset = queryset.filter(pk__in=list(conversation_ids))
    fixed: list[TranscriptProblem] = []
    remaining: list[TranscriptProblem] = []
    for conversation_id in queryset.values_list("pk", flat=True).iterator():
        if repair:
            fixed.extend(transcript_repair(conversation_id))
        conversation = Conversation.objects.filter(pk=conversation_id).first()
        if conversation is not None:
            remaining.extend(transcript_problems(conversation))
    return fixed, remaining
