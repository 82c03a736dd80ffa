"""Reading what the scripted provider received, in either selector's wire shape, and driving a chat over the API."""

from __future__ import annotations

import json

from django.test import Client

from conversations.services.threads.thread_writes import folder_create
from conversations.services.visibility.transitions import conversation_restore, conversation_trash
from tests.support.factories import api_call
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation

SELECTORS = ["responses", "chat.completions"]
MEMORY_HEADING = "## Long-term memories"


def new_chat(client: Client, **body: object) -> str:
    return api_call(client, "post", "/api/conversations/", {"persona": "elion", **body}, status=201)["id"]


def send(client: Client, conversation_id: str, content: str) -> dict:
    return api_call(client, "post", f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content})


def tool_names(request) -> list[str]:
    return [t.get("name") or (t.get("function") or {}).get("name") or t["type"] for t in request.body.get("tools", [])]


def tool_outputs(request) -> list[str]:
    """Every tool result the request carries, in order, as sent."""
    if "input" in request.body:
        return [i["output"] for i in request.body["input"] if i.get("type") == "function_call_output"]
    return [i["content"] for i in request.body["messages"] if i["role"] == "tool"]


def system_prompt(request) -> str:
    """The request's first system message (the stored static prompt)."""
    items = request.body.get("input") or request.body.get("messages")
    systems = [item["content"] for item in items if item.get("role") == "system"]
    assert systems, f"no system message in {items!r}"
    return systems[0]


def memory_section_texts(prompt: str) -> list[str]:
    """The texts of a prompt's long-term memory section ([] when absent)."""
    if MEMORY_HEADING not in prompt:
        return []
    section = prompt.split(MEMORY_HEADING, 1)[1].split("\n## ", 1)[0]
    return [line.split("] ", 1)[1] for line in section.splitlines() if line.startswith("- [")]


def body_text(request) -> str:
    return json.dumps(request.body, ensure_ascii=False)


def tool_refused_where_suggesting_is_not_allowed(scripted_provider, client: Client, call: dict, content: str) -> None:
    """A private chat, a shielded one and one in a hidden folder are never offered the propose tool `call`
    names (memories' and check-ins' alike: `may_suggest_memories`); the model calling it anyway is told there
    is no such tool."""
    private = new_chat(client, private=True)
    shielded = new_chat(client)
    conversation_trash(conversation_id=shielded)
    conversation_restore(conversation_id=shielded)
    hidden = new_chat(client, folder_id=folder_create(name="Quiet", hidden=True).pk)
    assert Conversation.objects.get(pk=shielded).shielded
    name = call["name"]
    for conversation_id in (private, shielded, hidden):
        # The model calls it anyway: it is not there.
        scripted_provider.clear()
        scripted_provider.script(ScriptedReply(tool_calls=[call]), ScriptedReply(text="ok"))
        send(client, conversation_id, content)
        first, second = scripted_provider.requests
        assert name not in tool_names(first)
        (output,) = tool_outputs(second)
        assert f"there is no tool named '{name}'" in output
