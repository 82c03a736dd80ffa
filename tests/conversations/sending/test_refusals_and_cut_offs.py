"""Refusals and cut-off replies end to end (issue 31), on both API selectors: the stream, the stored row,
the page and the exports. Real `openai` SDK against the scripted provider, which sends a `refusal`
content part (Responses `response.refusal.delta`; Chat Completions `delta.refusal`) and cuts replies off
(`response.incomplete` with `incomplete_details.reason`; `finish_reason` `length` / `content_filter`).
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient, Client

from tests.conftest import parse_sse, read_streaming
from tests.support.api_sends import last_reply, new_conversation, send
from tests.support.scripted_provider import ScriptedReply
from transcript.models import MessageStatus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SELECTORS = ["responses", "chat.completions"]
REFUSED = "I can't help with writing that."


@sync_to_async
def page(conversation_id: str) -> str:
    response = Client().get(f"/c/{conversation_id}/")
    assert response.status_code == 200
    return response.content.decode()


@sync_to_async
def export(conversation_id: str, fmt: str) -> str:
    response = Client().get(f"/api/conversations/{conversation_id}/export/", {"format": fmt})
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()


def reply_in_json_export(raw: str) -> dict:
    return [m for m in json.loads(raw)["messages"] if m["role"] == "assistant"][-1]


@pytest.mark.parametrize("selector", SELECTORS)
async def test_a_refusal_is_stored_marked_streamed_shown_and_exported(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    scripted_provider.script(ScriptedReply(refusal=REFUSED))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "Write something cruel about my neighbour.")

    deltas = [data for name, data in events if name == "delta"]
    assert "".join(d["text"] for d in deltas) == REFUSED and all(d.get("refusal") is True for d in deltas)
    assert events[-1] == ("done", {"message_id": events[-1][1]["message_id"], "status": "complete", "refusal": True})

    reply = await last_reply(conversation_id)
    assert (reply.content, reply.status, reply.metadata["refusal"]) == (REFUSED, MessageStatus.COMPLETE, True)

    html = await page(conversation_id)
    assert "data-refusal-text" in html and "declined to answer this" in html and REFUSED.replace("'", "&#x27;") in html
    assert 'class="badge badge-refusal" data-refusal>Declined' in html

    markdown = await export(conversation_id, "markdown")
    assert f"{REFUSED}\n[Declined: the model refused to answer this.]" in markdown
    exported = reply_in_json_export(await export(conversation_id, "json"))
    assert exported["content"] == REFUSED and exported["metadata"]["refusal"] is True


async def test_a_refusal_part_is_kept_verbatim_in_its_message_item(scripted_provider):
    scripted_provider.script(ScriptedReply(refusal=REFUSED, phase="final_answer"))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "Something I should not ask")
    reply = await last_reply(conversation_id)
    (item_part,) = [p for p in reply.parts if p["type"] == "output_item"]
    assert item_part["item"]["content"] == [{"type": "refusal", "refusal": REFUSED}]
    assert item_part["item"]["phase"] == "final_answer"
    scripted_provider.script(ScriptedReply(text="Fine."))
    await send(client, conversation_id, "Then tell me about bees.")
    replayed = [i for i in scripted_provider.last_request().body["input"] if i.get("type") == "message"]
    assert replayed == [{"type": "message", "id": item_part["item"]["id"], "role": "assistant", "status": "completed",
                         "content": [{"type": "refusal", "refusal": REFUSED}], "phase": "final_answer"}]


@pytest.mark.parametrize(("selector", "cut", "reason"), [
    ("responses", "max_output_tokens", "max_output_tokens"),
    ("responses", "content_filter", "content_filter"),
    ("chat.completions", "max_output_tokens", "length"),
    ("chat.completions", "content_filter", "content_filter"),
])
async def test_a_cut_off_reply_is_incomplete_with_its_reason_everywhere(scripted_provider, settings, selector, cut, reason):
    settings.ELION_API_SELECTOR = selector
    scripted_provider.script(ScriptedReply(text="The first half of a long story, and then", incomplete=cut))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "Tell me a long story.")

    name, done = events[-1]
    assert (name, done["status"], done["incomplete_reason"]) == ("done", "incomplete", reason)
    assert "refusal" not in done

    reply = await last_reply(conversation_id)
    assert reply.status == MessageStatus.INCOMPLETE
    assert reply.content == "The first half of a long story, and then"
    assert reply.metadata["incomplete_reason"] == reason
    assert reply.error == "" and reply.error_detail.startswith("The reply was cut off:")

    html = await page(conversation_id)
    assert f'data-incomplete-reason="{reason}">Cut off' in html
    assert 'data-action="continue"' in html

    assert f"[Cut off by the provider: {reason}]" in await export(conversation_id, "markdown")
    exported = reply_in_json_export(await export(conversation_id, "json"))
    assert exported["status"] == "incomplete" and exported["metadata"]["incomplete_reason"] == reason


async def test_continue_is_a_send_and_the_cut_off_text_travels_as_history(scripted_provider):
    scripted_provider.script(ScriptedReply(text="Once upon a time", incomplete="max_output_tokens"))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "A story, please.")
    scripted_provider.script(ScriptedReply(text=" there was a hive."))
    events = await send(client, conversation_id, "Please continue from where your last reply was cut off.")
    assert events[-1][1]["status"] == "complete"
    items = scripted_provider.last_request().body["input"]
    (cut,) = [i for i in items if i.get("type") == "message"]
    assert cut["status"] == "incomplete" and cut["content"][0]["text"] == "Once upon a time"
    # Only the newest reply offers Continue.
    assert 'data-action="continue"' not in await page(conversation_id)


async def test_a_cut_off_round_runs_none_of_its_tool_calls(scripted_provider):
    scripted_provider.script(ScriptedReply(
        tool_calls=[{"name": "list_library", "arguments": {}, "call_id": "call_cut"}], incomplete="max_output_tokens",
    ))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "Look it up")
    assert events[-1][1]["status"] == "incomplete"
    assert len(scripted_provider.requests) == 1
    reply = await last_reply(conversation_id)
    assert [p for p in reply.parts if p["type"] in ("tool_call", "tool_result")] == []


async def test_watching_a_settled_cut_off_reply_ends_with_its_reason(scripted_provider):
    scripted_provider.script(ScriptedReply(text="Half", incomplete="max_output_tokens"))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "Go")
    message_id = events[-1][1]["message_id"]
    response = await client.get(f"/api/conversations/{conversation_id}/messages/{message_id}/stream/")
    assert response.status_code == 200, response.content
    watched = parse_sse(await read_streaming(response))
    assert watched[-1] == ("done", {"message_id": message_id, "status": "incomplete",
                                     "incomplete_reason": "max_output_tokens"})


async def test_the_same_send_again_replays_the_cut_off_ending(scripted_provider):
    scripted_provider.script(ScriptedReply(refusal="No.", incomplete="content_filter"))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    body = {"content": "Again?", "client_message_id": "9b0f6a52-3c1e-4f5a-9c57-0d7f4b1f2a31"}
    url = f"/api/conversations/{conversation_id}/messages/"
    first = parse_sse(await read_streaming(await client.post(url, body, content_type="application/json")))
    again = parse_sse(await read_streaming(await client.post(url, body, content_type="application/json")))
    assert len(scripted_provider.requests) == 1  # the repeat is answered from the stored reply
    expected = {"status": "incomplete", "incomplete_reason": "content_filter", "refusal": True}
    assert first[-1][1] == {**expected, "message_id": first[-1][1]["message_id"]}
    assert again[-1] == first[-1]
