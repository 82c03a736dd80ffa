"""The `propose_memory` tool (issue 35): Elion may suggest a memory; only the owner decides.

Offered (`conversations.sending.tool_offer.available_tools`) only while
Settings → "Elion may suggest memories" is on and the conversation may
suggest (`continuity.rules.eligibility.may_suggest_memories`: never a private,
shielded or quarantined one); `memories.services.proposals.memory_propose` asks both
again when the call runs. The result tells the model what happened: proposed
(and that it is not a memory yet) or refused, with the reason. A proposal
saves no memory: nothing of it reaches a snapshot, a prompt or recall until
the owner approves it, and then only new threads.
"""

from __future__ import annotations

import json
from uuid import UUID

from memories.models import IMPORTANCE_MAX, IMPORTANCE_MIN, PROPOSAL_REASON_MAX, MemoryCategory
from memories.services.proposals import memory_propose

PROPOSE_MEMORY = {
    "name": "propose_memory",
    "description": (
        "Suggest a long-term memory for the owner to review: a durable fact about them or your shared life "
        "that would help in future conversations. Nothing is saved by this call: the owner approves, edits "
        "or dismisses it, and an approved memory reaches only new conversations. Suggest rarely, one fact "
        "per call, in the owner's own terms; never repeat a suggestion the tool refused."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The memory, as one short self-contained statement."},
            "category": {"type": "string", "enum": list(MemoryCategory.values)},
            "importance": {
                "type": "integer", "minimum": IMPORTANCE_MIN, "maximum": IMPORTANCE_MAX,
                "description": "1 minor, 5 essential.",
            },
            "reason": {
                "type": "string", "maxLength": PROPOSAL_REASON_MAX,
                "description": "One sentence: why this is worth keeping.",
            },
        },
        "required": ["text", "reason"],
    },
}


def propose_memory(args: dict, *, conversation_id: UUID, reply_id: UUID | None, call_id: str) -> str:
    """Run one call. Bad arguments raise `elion.base.errors.InvalidInput` (the tool loop makes it an error result)."""
    outcome = memory_propose(
        conversation_id=conversation_id, reply_id=reply_id, tool_call_id=call_id,
        text=args.get("text"), category=args.get("category"), importance=args.get("importance"),
        reason=args.get("reason"),
    )
    result = {"status": outcome.status, "code": outcome.code, "detail": outcome.detail}
    if outcome.proposal is not None:
        result["proposal_id"] = outcome.proposal.pk
    return json.dumps(result, ensure_ascii=False)
