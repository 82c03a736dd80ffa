"""The conversation as the provider reads it: neutral request messages turned into the wire.

A request is a list of neutral messages (`continuity.rules.request_policy` builds it): `{"role", "content"}`
turns (content a string, or text and image parts), assistant tool calls and tool results, reasoning
items (`reasoning_message`) and output items kept verbatim (`output_item_message`). `responses_input`
makes the Responses API's `input` of them, `chat_messages` the Chat Completions `messages`. Pure
Python, no Django, no SDK: the gateway sends what these return (docs/provider.md).
"""

from __future__ import annotations

import json
from typing import Any

# A reasoning item travels in the neutral message list as
# `{"role": "reasoning", "id", "encrypted_content", "summary": [text, ...]}` (`reasoning_message`);
# only the Responses API takes it back, Chat Completions requests leave it out.
REASONING_ROLE = "reasoning"


def reasoning_message(item_id: str, encrypted_content: str, summary: list[str]) -> dict[str, Any]:
    return {"role": REASONING_ROLE, "id": item_id, "encrypted_content": encrypted_content, "summary": list(summary)}


# A Responses output item kept verbatim (an assistant `message` with its `phase`, a `web_search_call`)
# travels as `{"role": "output_item", "item": {...}}` (`output_item_message`): the Responses API takes it
# back in its place; Chat Completions gets an assistant message's text and nothing of the others.
OUTPUT_ITEM_ROLE = "output_item"

# What an input item of each replayed kind may hold (the SDK's `ResponseOutputMessageParam`,
# `ResponseOutputTextParam` / `ResponseOutputRefusalParam`, `ResponseFunctionWebSearchParam`):
# what the provider sends besides (e.g. `logprobs`) stays stored, and is not sent back.
_REPLAYED_KEYS = {
    "message": ("type", "id", "role", "status", "content", "phase"),
    "web_search_call": ("type", "id", "status", "action"),
}
_REPLAYED_PART_KEYS = {"output_text": ("type", "text", "annotations"), "refusal": ("type", "refusal")}
# The kept kinds a later request carries back. An `image_generation_call` is kept but not sent: the
# input item would need its image as base64, and neither API takes an image in an assistant turn.
REPLAYED_ITEM_TYPES = frozenset(_REPLAYED_KEYS)


def output_item_message(item: dict[str, Any]) -> dict[str, Any]:
    return {"role": OUTPUT_ITEM_ROLE, "item": item}


def replayed_output_item(item: dict[str, Any]) -> dict[str, Any]:
    """A stored output item (of `REPLAYED_ITEM_TYPES`) as a Responses input item: its own fields, in place,
    `phase` kept."""
    keys = _REPLAYED_KEYS[item["type"]]
    replayed = {key: item[key] for key in keys if key in item and item[key] is not None}
    if item.get("type") == "message":
        replayed["content"] = [
            {key: part[key] for key in _REPLAYED_PART_KEYS.get(part.get("type"), tuple(part)) if key in part}
            for part in item.get("content") or []
        ]
    return replayed


def output_message_text(item: dict[str, Any]) -> str:
    """The words of an output `message` item: its text parts and refusals, in order."""
    return "".join(
        str(part.get("text") if part.get("type") == "output_text" else part.get("refusal") or "")
        for part in item.get("content") or [] if isinstance(part, dict)
    )


def responses_input(messages: list[dict[str, Any]], image_detail: str = "auto") -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == REASONING_ROLE:
            items.append({
                "type": "reasoning",
                "id": m["id"],
                "encrypted_content": m["encrypted_content"],
                "summary": [{"type": "summary_text", "text": text} for text in m["summary"]],
            })
            continue
        if m["role"] == OUTPUT_ITEM_ROLE:
            items.append(replayed_output_item(m["item"]))
            continue
        if m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["call_id"], "output": m["content"]})
            continue
        if m.get("content"):
            # System prompts stay input items (not `instructions`) so ordering is explicit.
            items.append({"role": m["role"], "content": _responses_content(m["content"], image_detail)})
        for c in m.get("tool_calls") or []:
            args = _as_json(c["arguments"])
            item_id = {"id": c["item_id"]} if c.get("item_id") else {}
            items.append({"type": "function_call", **item_id, "call_id": c["call_id"], "name": c["name"], "arguments": args})
    return items


def chat_messages(messages: list[dict[str, Any]], image_detail: str = "auto") -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == REASONING_ROLE:
            continue
        if m["role"] == OUTPUT_ITEM_ROLE:
            # Chat Completions has no output items: an assistant message goes back as its text, the rest not at all.
            if m["item"].get("type") == "message":
                wire.append({"role": "assistant", "content": output_message_text(m["item"])})
            continue
        if m["role"] == "tool":
            wire.append({"role": "tool", "tool_call_id": m["call_id"], "content": m["content"]})
        elif m.get("tool_calls"):
            calls = [{"id": c["call_id"], "type": "function", "function": _function(c)} for c in m["tool_calls"]]
            wire.append({"role": "assistant", "content": m.get("content") or None, "tool_calls": calls})
        else:
            wire.append({"role": m["role"], "content": _chat_content(m["content"], image_detail)})
    return wire


# A turn with attachments carries a list of neutral parts instead of a string:
# `{"type": "text", "text"}` and `{"type": "image", "image_url": <data URL>}`.


def _responses_content(content: str | list[dict[str, Any]], image_detail: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [
        {"type": "input_image", "image_url": part["image_url"], "detail": image_detail} if part["type"] == "image"
        else {"type": "input_text", "text": part["text"]}
        for part in content
    ]


def _chat_content(content: str | list[dict[str, Any]], image_detail: str) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [
        {"type": "image_url", "image_url": {"url": part["image_url"], "detail": image_detail}} if part["type"] == "image"
        else {"type": "text", "text": part["text"]}
        for part in content
    ]


def content_text(content: str | list[dict[str, Any]] | None) -> str:
    """The text of a message's content, whichever form it has."""
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if part.get("type") == "text")
    return str(content or "")


def _function(call: dict[str, Any]) -> dict[str, str]:
    return {"name": call["name"], "arguments": _as_json(call["arguments"])}


def _as_json(arguments: object) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
