"""The `diagnostics` event never carries text, on either transport, even when every text source is in play.

The send below carries a prior-thread handoff, a keyword-recall excerpt and a tool round, so the
request holds plenty of words that could leak; the event must still hold only the fixed names with
numbers and booleans (and the fixed estimate method), over SSE and over the WebSocket alike.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from conversations.services.threads.thread_writes import conversation_create
from tests.conftest import parse_sse, read_streaming
from tests.support.scripted_provider import ScriptedReply
from tests.support.websocket import communicator, receive_until_done
from transcript.models import Message

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

DIAGNOSTIC_NAMES = {
    "history_tokens", "static_prompt_tokens", "handoff_tokens", "handoff_included_in_static",
    "dynamic_context_tokens", "tool_definition_tokens", "total_input_tokens", "input_budget_tokens",
    "remaining_tokens", "trimmed_messages", "estimate_method",
}
PRIOR = ("Shall we call the comet Zephyrine?", "Zephyrine suits it, silver and quick.")
QUESTION = "Do you remember what we called the comet, Zephyrine?"
SECRET_WORDS = ("zephyrine", "comet", "silver", "quick", "remember", "orchard")


OLDER = ("Zephyrine crossed the orchard sky at midnight.", "A comet over the orchard, how lovely.")


def seed_thread(title: str, pair: tuple[str, str]) -> None:
    thread = conversation_create(persona="elion", title=title)
    parent = None
    for seq, (role, content) in enumerate(zip(("user", "assistant"), pair, strict=True), start=1):
        parent = Message.objects.create(conversation=thread, parent=parent, seq=seq, role=role, content=content)
    thread.head, thread.last_seq = parent, 2
    thread.save(update_fields=["head", "last_seq"])


@sync_to_async
def thread_with_every_text_source():
    seed_thread("Night sky", OLDER)  # recalled by keyword (the handoff's own text is never recalled twice)
    seed_thread("Comet names", PRIOR)  # the most recent thread: its final exchange is the handoff
    return conversation_create(persona="elion")  # a New Chat


def script_two_sends(provider) -> None:
    """A plain first reply (it ends the thread's birth period, when recall is off), then a tool round."""
    provider.script(
        ScriptedReply(text="Hello again."),
        ScriptedReply(tool_calls=[{"name": "search_past_conversations", "arguments": {"query": "orchard comet"},
                                   "call_id": "c1"}]),
        ScriptedReply(text="Yes, silver and quick."),
    )


def assert_textless(diagnostics: dict) -> None:
    assert set(diagnostics) == DIAGNOSTIC_NAMES
    for name, value in diagnostics.items():
        if name == "estimate_method":
            assert value == "chars_div_4"
        else:
            assert isinstance(value, int), (name, value)  # a bool is an int: numbers and booleans only
    flat = json.dumps(diagnostics).lower()
    assert not [word for word in SECRET_WORDS if word in flat]


def assert_every_source_was_in_play(diagnostics: dict, provider) -> None:
    """There was text to leak: the handoff, a recall excerpt and tool definitions all went out."""
    assert diagnostics["handoff_tokens"] > 0 and diagnostics["dynamic_context_tokens"] > 0
    assert diagnostics["tool_definition_tokens"] > 0
    sent = json.dumps(provider.requests[1].body)
    assert "Zephyrine suits it" in sent and "orchard sky at midnight" in sent


async def test_diagnostics_event_over_sse_carries_no_text(scripted_provider):
    conversation = await thread_with_every_text_source()
    script_two_sends(scripted_provider)
    client = AsyncClient()
    events = []
    for content in ("Good evening.", QUESTION):
        response = await client.post(
            f"/api/conversations/{conversation.id}/messages/", {"content": content}, content_type="application/json"
        )
        events = parse_sse(await read_streaming(response))
        assert events[-1][1]["status"] == "complete"
        for name, data in events:
            if name == "diagnostics":
                assert_textless(data)
    last = next(data for name, data in events if name == "diagnostics")
    assert_every_source_was_in_play(last, scripted_provider)


async def test_diagnostics_event_over_the_websocket_carries_no_text(scripted_provider):
    conversation = await thread_with_every_text_source()
    script_two_sends(scripted_provider)
    ws = communicator(conversation.id)
    connected, _ = await ws.connect()
    assert connected
    frames = []
    for content in ("Good evening.", QUESTION):
        await ws.send_json_to({"type": "send", "content": content})
        frames = await receive_until_done(ws)
        assert frames[-1]["status"] == "complete"
        for frame in frames:
            if frame["type"] == "diagnostics":
                assert_textless({key: value for key, value in frame.items() if key != "type"})
    await ws.disconnect()
    last = next(frame for frame in frames if frame["type"] == "diagnostics")
    assert_every_source_was_in_play({k: v for k, v in last.items() if k != "type"}, scripted_provider)
