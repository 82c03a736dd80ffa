"""Tool calls and their results stay paired (the synthetic result an interrupted call gets); reasoning in its place.

Seed 004: every tool call in a projected request has exactly one result; a
call whose process died before it returned gets a synthetic error result,
marked `"synthetic": true`, stored by the stale-stream sweep and by
transcript repair, and used with the same text by the request projection.
Imports models only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from transcript.models import Message, MessageStatus, Role
from transcript.provider.wire import REPLAYED_ITEM_TYPES, output_item_message, reasoning_message

INTERRUPTED_RESULT = "The tool call was interrupted before it returned a result."


def synthetic_result_part(call_id: str) -> dict:
    return {
        "type": "tool_result",
        "call_id": call_id,
        "content": f"Tool error: {INTERRUPTED_RESULT}",
        "is_error": True,
        "synthetic": True,
    }


def unpaired_call_ids(parts: list[dict] | None) -> list[str]:
    """Tool calls in `parts` with no result, in stored order."""
    parts = parts or []
    answered = {p.get("call_id") for p in parts if isinstance(p, dict) and p.get("type") == "tool_result"}
    return [
        p.get("call_id") for p in parts
        if isinstance(p, dict) and p.get("type") == "tool_call" and p.get("call_id") not in answered
    ]


def parts_closed(parts: list[dict] | None) -> list[dict]:
    """`parts` with a synthetic error result after each unpaired call (a pure function)."""
    parts = list(parts or [])
    for call_id in unpaired_call_ids(parts):
        parts.append(synthetic_result_part(call_id))
    return parts


def interrupted_tool_calls_close(message_ids: Iterable[UUID]) -> int:
    """Store synthetic results for unpaired calls on these finished (non-streaming) messages.

    Returns how many messages changed. A message still `streaming` is left
    alone: its process may yet store the real result.
    """
    changed = 0
    ids = list(message_ids)
    if not ids:
        return 0
    with transaction.atomic():
        rows = Message.objects.select_for_update().filter(pk__in=ids).exclude(status=MessageStatus.STREAMING).order_by("pk")
        for message in rows.only("pk", "parts", "status"):
            if unpaired_call_ids(message.parts):
                Message.objects.filter(pk=message.pk).update(parts=parts_closed(message.parts), updated_at=timezone.now())
                changed += 1
    return changed


def project_tool_parts(parts: list[dict]) -> list[dict]:
    """Request messages for stored parts: per round, its reasoning and output items in the order they came,
    the calls, then one result for each.

    A pure function of the stored parts. A call without a stored result gets
    a synthetic error result, so the request is always well paired. A
    reasoning item travels in its place, before the calls of its round (or,
    in the last round, before the reply's text), unless its encrypted content
    was dropped (`reasoning_parts_drop`). An output item kept verbatim (an
    assistant `message` with its `phase`, a preamble included; a
    `web_search_call`) travels in its place too (`output_item_part`); an
    `image_generation_call` is kept but not sent (`REPLAYED_ITEM_TYPES`).
    """
    if not parts:
        return []  # most turns: a send projects a window of them
    results = {p["call_id"]: p for p in parts if p.get("type") == "tool_result"}
    rounds: dict[int, list[dict]] = {}
    items: dict[int, list[dict]] = {}
    for part in parts:
        if part.get("type") == "tool_call":
            rounds.setdefault(int(part.get("round", 0)), []).append(part)
        elif part.get("type") == "reasoning" and part.get("encrypted_content"):
            items.setdefault(int(part.get("round", 0)), []).append(
                reasoning_message(part["id"], part["encrypted_content"], part.get("summary") or [])
            )
        elif (
            part.get("type") == OUTPUT_ITEM_PART and isinstance(part.get("item"), dict)
            and part["item"].get("type") in REPLAYED_ITEM_TYPES
        ):
            items.setdefault(int(part.get("round", 0)), []).append(output_item_message(part["item"]))
    messages: list[dict] = []
    for round_number in sorted(rounds.keys() | items.keys()):
        messages += items.get(round_number, [])
        calls = rounds.get(round_number)
        if not calls:
            continue
        messages.append({
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"call_id": c["call_id"], "name": c["name"], "arguments": c["arguments"],
                 **({"item_id": c["item_id"]} if c.get("item_id") else {})}
                for c in calls
            ],
        })
        for call in calls:
            stored = results.get(call["call_id"])
            content = stored["content"] if stored is not None else f"Tool error: {INTERRUPTED_RESULT}"
            messages.append({"role": "tool", "call_id": call["call_id"], "content": content})
    return messages


OUTPUT_ITEM_PART = "output_item"


def output_item_part(item: dict, round_number: int) -> dict:
    """A Responses output item as stored on its assistant message, verbatim (`item`: the provider's JSON),
    save the characters no database column may hold (`storable`)."""
    return {"type": OUTPUT_ITEM_PART, "item": storable(item), "round": round_number}


# NUL and lone surrogates: PostgreSQL's jsonb refuses them (`\u0000 cannot be converted to text`).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(value: object) -> object:
    """`value` (JSON) with every NUL or lone surrogate in its strings and keys replaced by U+FFFD."""
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, list):
        return [storable(v) for v in value]
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    return value


def reasoning_part(item_id: str, encrypted_content: str | None, summary: list[str], round_number: int) -> dict:
    """A reasoning output item as stored on its assistant message: opaque, never speech."""
    return {
        "type": "reasoning",
        "id": item_id,
        "encrypted_content": encrypted_content,
        "summary": list(summary),
        "round": round_number,
    }


def reasoning_summary_text(parts: list[dict] | None) -> str:
    """The reasoning summaries of a message's parts, in order, for the collapsed line above its reply."""
    return "\n\n".join(
        text for p in parts or [] if isinstance(p, dict) and p.get("type") == "reasoning"
        for text in p.get("summary") or [] if isinstance(text, str) and text
    )


def has_carried_reasoning(parts: list[dict] | None) -> bool:
    return any(isinstance(p, dict) and p.get("type") == "reasoning" and p.get("encrypted_content") for p in parts or [])


def reasoning_parts_forget(parts: list, reason: str) -> list:
    """`parts` with each reasoning item's encrypted content forgotten (its summary kept), marked `dropped`."""
    return [
        {**p, "encrypted_content": None, "dropped": reason}
        if isinstance(p, dict) and p.get("type") == "reasoning" and p.get("encrypted_content") else p
        for p in parts
    ]


def reasoning_parts_drop(conversation_id: UUID, *, keep_message_id: UUID, reason: str) -> int:
    """Forget the encrypted content of the conversation's stored reasoning items (the provider refused
    it: another key or model), keeping their summaries, so later requests carry none of them; the reply
    `keep_message_id` keeps its own. Rare, so it may read every assistant row. Returns how many changed."""
    changed = 0
    rows = Message.objects.filter(conversation_id=conversation_id, role=Role.ASSISTANT).exclude(pk=keep_message_id)
    for message in rows.only("pk", "parts").iterator():
        if not has_carried_reasoning(message.parts):
            continue
        parts = reasoning_parts_forget(message.parts, reason)
        Message.objects.filter(pk=message.pk).update(parts=parts, updated_at=timezone.now())
        changed += 1
    return changed
