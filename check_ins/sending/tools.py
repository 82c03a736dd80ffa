"""The `propose_check_in` tool (issue 44, item 3): Elion may suggest a check-in; only the owner schedules one.

Offered (`conversations.sending.tool_offer.available_tools`) under the rules of
`propose_memory`: only while Settings → "Elion may propose check-ins" is on and
the conversation may suggest (`continuity.rules.eligibility.may_suggest_memories`:
never a private, shielded, trashed or hidden one); `check_ins.services.proposals.check_in_propose`
asks both again when the call runs. The result tells the model what happened:
proposed (nothing is scheduled yet, and when it would first run) or refused,
with the reason. The definition is fixed text, so the tools stay a stable
prefix for the provider's prompt cache; the model learns the owner's local
time from a refusal ("that time has passed: it is now …").
"""

from __future__ import annotations

import json
from uuid import UUID

from check_ins.models import ScheduleKind
from check_ins.services.inputs import BRIEF_MAX, N_MAX, TITLE_MAX
from check_ins.services.proposals import REASON_MAX, TOOL_TARGETS, check_in_propose
from check_ins.services.schedule_policy import WEEKDAYS
from conversations.sending.tool_loop import Tool, ToolContext, ToolInputError, tools_add
from elion.base.errors import ServiceError

PROPOSE_CHECK_IN = {
    "name": "propose_check_in",
    "description": (
        "Suggest a check-in for the owner to approve: a time when you will write to them first, for "
        "something they mentioned (\"Shall I ask on Friday how the interview went?\"). Nothing is scheduled "
        "by this call: the owner approves, edits or dismisses it. Times are wall times in the owner's time "
        "zone. Suggest rarely, only when the owner would welcome it; never repeat a suggestion the tool refused."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": TITLE_MAX, "description": "A short name for the check-in."},
            "brief": {
                "type": "string", "maxLength": BRIEF_MAX,
                "description": "What to do then, in the owner's terms (\"ask how the interview went\").",
            },
            "schedule": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(ScheduleKind.values)},
                    "at": {
                        "type": "string",
                        "description": "once and every_n_days: YYYY-MM-DDTHH:MM (the first run); daily and "
                        "weekdays: HH:MM.",
                    },
                    "days": {
                        "type": "array", "items": {"type": "string", "enum": list(WEEKDAYS)},
                        "description": "weekdays only.",
                    },
                    "n": {"type": "integer", "minimum": 1, "maximum": N_MAX, "description": "every_n_days only."},
                },
                "required": ["kind", "at"],
            },
            "target": {
                "type": "string", "enum": list(TOOL_TARGETS),
                "description": "Write in this conversation, or open a new chat each time.",
            },
            "reason": {
                "type": "string", "maxLength": REASON_MAX,
                "description": "One sentence: why this check-in would help.",
            },
        },
        "required": ["title", "brief", "schedule", "target"],
    },
}


def propose_check_in(args: dict, *, conversation_id: UUID, reply_id: UUID | None, call_id: str) -> str:
    """Run one call. Bad arguments raise `elion.base.errors.InvalidInput` (`_propose_check_in` makes it the tool's
    input error, which the tool loop answers as an error result)."""
    outcome = check_in_propose(
        conversation_id=conversation_id, reply_id=reply_id, tool_call_id=call_id,
        title=args.get("title"), brief=args.get("brief"), schedule=args.get("schedule"),
        target=args.get("target", "this_conversation"), reason=args.get("reason"),
    )
    result = {"status": outcome.status, "code": outcome.code, "detail": outcome.detail}
    if outcome.proposal is not None:
        result["proposal_id"] = outcome.proposal.pk
    return json.dumps(result, ensure_ascii=False)


def _propose_check_in(args: dict, context: ToolContext) -> str:
    try:
        return propose_check_in(
            args, conversation_id=context.conversation_id, reply_id=context.message_id, call_id=context.call_id
        )
    except ServiceError as exc:
        raise ToolInputError(exc.detail) from exc


# What `check_ins.apps.CheckInsConfig.ready` adds (`check_in_tools_add`) to the send's table of tools (`tool_loop.TOOLS`), with the
# definition `tool_offer.available_tools` offers: it reads the check-ins' limits and choices.
CHECK_IN_TOOLS = (Tool("propose_check_in", _propose_check_in, definition=PROPOSE_CHECK_IN),)


def check_in_tools_add() -> None:
    """Add `CHECK_IN_TOOLS` to the send's table of tools (called by `check_ins.apps.CheckInsConfig.ready`)."""
    tools_add(CHECK_IN_TOOLS)
