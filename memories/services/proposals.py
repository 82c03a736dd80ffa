"""Memory proposals: Elion may suggest, only the owner decides (issue 35).

- `memory_propose` (the `propose_memory` tool's service) records a
  suggestion with its source: the conversation, the owner's message the
  reply answered, and the reply and tool call that proposed it. It saves no
  memory and touches no snapshot or prompt. It refuses, with a reason the
  model reads, when suggestions are off, when the conversation may not
  suggest (`continuity.rules.eligibility.may_suggest_memories`: never private,
  shielded or quarantined), when the text duplicates a memory, a pending or
  a dismissed proposal (`text_key`: case and spacing aside), and when the
  conversation already has `ELION_MEMORY_PROPOSALS_PENDING_MAX` pending.
- `proposal_approve` creates an ordinary memory through `memory_add`
  (optionally with the owner's edits), so the seed's rule holds: it joins
  future threads and branches only. Its source is this proposal.
- `proposal_dismiss` keeps the proposal as dismissed (the same text is then
  refused); `proposals_clear_dismissed` deletes the dismissed ones.

Every write takes `global_write_lock()` first and the proposal's row second
(the lock order of `write_lock.global_write_lock`), so an approve racing a delete of
the same memory, a dismiss or a conversation's deletion leaves either the
memory with its approved proposal, or neither.
"""

from __future__ import annotations

from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from continuity.rules.eligibility import may_suggest_memories
from elion.base.assistant_settings import assistant_settings_read
from elion.base.proposals import (
    ProposalOutcome,
    proposal_changes_checked,
    proposal_dismissed,
    proposal_pending_check,
    proposal_reason_clean,
    proposal_refused,
    proposals_of_status,
)
from elion.base.rows import access_row
from memories.models import (
    PROPOSAL_REASON_MAX,
    TOOL_CALL_ID_MAX,
    Memory,
    MemoryProposal,
    MemorySource,
    ProposalStatus,
)
from memories.services.memory_writes import memory_add, memory_draft
from memories.services.write_lock import global_write_lock
from transcript.models import Conversation, Message

APPROVE_FIELDS = ("text", "category", "importance")


def text_key(text: str) -> str:
    """A text as duplicates are compared: spacing collapsed, case folded."""
    return " ".join(text.split()).casefold()


def duplicate_of(key: str) -> str | None:
    """Why a text with this key would be a duplicate: an existing memory, a pending or a dismissed proposal."""
    if any(text_key(text) == key for text in Memory.objects.values_list("text", flat=True).iterator()):
        return "memory"
    status = (
        MemoryProposal.objects.filter(text_key=key, status__in=[ProposalStatus.PENDING, ProposalStatus.DISMISSED])
        .values_list("status", flat=True)
        .first()
    )
    return status


_DUPLICATE_DETAIL = {
    "memory": "The owner already keeps this exact memory; nothing was proposed.",
    ProposalStatus.PENDING: "This exact memory is already waiting for the owner's review; nothing was proposed.",
    ProposalStatus.DISMISSED: "The owner dismissed this exact memory before; do not propose it again.",
}


def pending_count(conversation_id: UUID) -> int:
    return MemoryProposal.objects.filter(conversation_id=conversation_id, status=ProposalStatus.PENDING).count()


@transaction.atomic
def memory_propose(
    *, conversation_id: UUID, reply_id: UUID | None, tool_call_id: str,
    text: object, category: object = None, importance: object = None, reason: object = None,
) -> ProposalOutcome:
    """Record Elion's suggestion for the owner's review, or say why not. Bad arguments raise InvalidInput."""
    draft = memory_draft(text=text, category=category, importance=importance)
    reason_text = proposal_reason_clean(reason, limit=PROPOSAL_REASON_MAX)
    global_write_lock()
    conversation = Conversation.objects.select_related("folder").filter(pk=conversation_id).first()
    if not assistant_settings_read().memory_suggestions:
        return proposal_refused("suggestions_off", "The owner has turned memory suggestions off; nothing was proposed.")
    if conversation is None or not may_suggest_memories(conversation):
        return proposal_refused(
            "not_allowed_here",
            "Memories cannot be suggested from this conversation (private, shielded or hidden); nothing was proposed.",
        )
    key = text_key(draft.text)
    duplicate = duplicate_of(key)
    if duplicate is not None:
        return proposal_refused(f"duplicate_{duplicate}", _DUPLICATE_DETAIL[duplicate])
    limit = settings.ELION_MEMORY_PROPOSALS_PENDING_MAX
    if pending_count(conversation.pk) >= limit:
        return proposal_refused(
            "pending_limit",
            f"The owner already has {limit} suggestions from this conversation to review; that is enough "
            "for now, so nothing was proposed.",
        )
    reply = Message.objects.filter(pk=reply_id, conversation=conversation).only("pk", "parent_id").first()
    proposal = MemoryProposal.objects.create(
        text=draft.text, text_key=key, category=draft.category, importance=draft.importance, reason=reason_text,
        conversation=conversation, reply=reply, source_message_id=reply.parent_id if reply else None,
        tool_call_id=(tool_call_id or "")[:TOOL_CALL_ID_MAX],
    )
    return ProposalOutcome(
        "proposed", "proposed",
        "Proposed. It is not a memory: the owner will approve, edit or dismiss it. It reaches no conversation "
        "until approved, and then only new ones.",
        proposal,
    )


def access_proposal(proposal_id: object, *, lock: bool = False) -> MemoryProposal:
    return access_row(
        MemoryProposal.objects.all(), proposal_id, kind="int", missing="No memory proposal has that id.",
        code="proposal_not_found", lock=lock,
    )


@transaction.atomic
def proposal_approve(*, proposal_id: object, changes: dict | None = None) -> Memory:
    """Turn a pending proposal into an ordinary memory (new threads only), with the owner's optional edits."""
    changes = proposal_changes_checked(changes or {}, APPROVE_FIELDS, noun="memory", code="unknown_field")
    global_write_lock()
    proposal = access_proposal(proposal_id, lock=True)
    proposal_pending_check(proposal, "approved", code="proposal_not_pending")
    memory = memory_add(
        text=changes.get("text", proposal.text),
        category=changes.get("category", proposal.category),
        importance=changes.get("importance", proposal.importance),
        source=MemorySource.PROPOSAL,
    )
    proposal.status, proposal.memory, proposal.decided_at = ProposalStatus.APPROVED, memory, timezone.now()
    proposal.save(update_fields=["status", "memory", "decided_at"])
    return memory


@transaction.atomic
def proposal_dismiss(*, proposal_id: object) -> MemoryProposal:
    """Keep a pending proposal as dismissed: the same text is refused from now on. Dismissing twice is a no-op."""
    global_write_lock()
    return proposal_dismissed(access_proposal(proposal_id, lock=True), code="proposal_not_pending")


@transaction.atomic
def proposals_clear_dismissed() -> int:
    """Delete every dismissed proposal; their texts may be proposed again."""
    global_write_lock()
    deleted, _ = MemoryProposal.objects.filter(status=ProposalStatus.DISMISSED).delete()
    return deleted


def proposals_list(status: object = None) -> QuerySet[MemoryProposal]:
    """Pending and dismissed proposals (approved ones live on as memories), newest first; or one status."""
    return proposals_of_status(MemoryProposal.objects.select_related("conversation"), status)


def reply_proposals(reply_id: UUID) -> list[MemoryProposal]:
    """The proposals one reply made (the chat's cards), oldest first."""
    return list(MemoryProposal.objects.filter(reply_id=reply_id).select_related("memory").order_by("created_at", "id"))

