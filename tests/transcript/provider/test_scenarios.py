"""The scripted provider's scenario library, walked through the whole app (issue 31), and the request
contract it enforces: every body checked against the installed `openai` package's request types.

Real `openai` SDK, real HTTP to the scripted provider, real send pipeline and database.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from tests.support.api_sends import last_reply, new_conversation, send
from tests.support.scripted_scenarios import SELECTOR_SCENARIOS, scenario
from transcript.models import Message, MessageStatus, Role

pytestmark = [pytest.mark.django_db(transaction=True)]


def runs_on(name: str) -> list:
    return [pytest.param(name, selector, id=f"{name}-{selector}") for selector in SELECTOR_SCENARIOS[name]]


@sync_to_async
def settings_update(**changes) -> None:
    from conversations.services.settings_writes import assistant_settings_update

    assistant_settings_update(**changes)


def items(request) -> list[dict]:
    body = request.body
    return body["input"] if "input" in body else body["messages"]


def kinds(wire: list[dict]) -> list[str]:
    return [item.get("type") or item["role"] for item in wire]


async def run(scripted_provider, settings, name: str, selector: str, *contents: str):
    settings.ELION_API_SELECTOR = selector
    scripted_provider.script(*scenario(name))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    streams = [await send(client, conversation_id, content) for content in contents or ("Hello",)]
    return client, conversation_id, streams


# --- the library, scenario by scenario ---------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("refusal"))
async def test_scenario_refusal(scripted_provider, settings, name, selector):
    _, conversation_id, (events,) = await run(scripted_provider, settings, name, selector)
    reply = await last_reply(conversation_id)
    assert (reply.content, reply.metadata.get("refusal")) == ("I can't help with that.", True)
    assert events[-1][1]["refusal"] is True


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("incomplete") + runs_on("content_filter"))
async def test_scenario_incomplete_and_length(scripted_provider, settings, name, selector):
    _, conversation_id, (events,) = await run(scripted_provider, settings, name, selector)
    reply = await last_reply(conversation_id)
    expected = {"incomplete": {"responses": "max_output_tokens", "chat.completions": "length"}}.get(
        name, {"responses": "content_filter", "chat.completions": "content_filter"}
    )[selector]
    assert (reply.status, reply.metadata["incomplete_reason"]) == (MessageStatus.INCOMPLETE, expected)
    assert events[-1][1] == {"message_id": str(reply.id), "status": "incomplete", "incomplete_reason": expected}


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("preamble_with_phase"))
async def test_scenario_preamble_with_phase_goes_into_the_follow_up_and_later_requests_in_place(
    scripted_provider, settings, name, selector
):
    _, conversation_id, _ = await run(scripted_provider, settings, name, selector, "Look in the Library", "Thanks")
    first_reply = Message.objects.filter(conversation_id=conversation_id, role=Role.ASSISTANT).order_by("seq")
    reply = await sync_to_async(lambda: first_reply.first())()
    assert reply.content == "Let me look that up. The Library is empty."
    _, follow_up, later = scripted_provider.requests
    if selector == "chat.completions":  # Chat Completions keeps its shape: no items, no phase
        assert "phase" not in json.dumps(later.body)
        assert later.body["messages"][-2] == {"role": "assistant", "content": reply.content}
        return
    # The round's own preamble goes into the tool follow-up, with its phase, before the call.
    tail = follow_up.body["input"][-3:]
    assert kinds(tail) == ["message", "function_call", "function_call_output"]
    assert tail[0]["phase"] == "commentary" and tail[0]["content"][0]["text"] == "Let me look that up. "
    # Later requests replay both assistant messages in place, each with its phase; nothing plain.
    wire = later.body["input"]
    assert kinds(wire)[-6:] == ["user", "message", "function_call", "function_call_output", "message", "user"]
    phases = [(item["phase"], item["content"][0]["text"]) for item in wire if item.get("type") == "message"]
    assert phases == [("commentary", "Let me look that up. "), ("final_answer", "The Library is empty.")]
    stored = [p["item"] for p in reply.parts if p["type"] == "output_item"]
    assert [item["id"] for item in stored] == [item["id"] for item in wire if item.get("type") == "message"]


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("parallel_calls"))
async def test_scenario_parallel_calls_are_answered_together(scripted_provider, settings, name, selector):
    _, conversation_id, (events,) = await run(scripted_provider, settings, name, selector)
    assert events[-1][1]["status"] == "complete"
    reply = await last_reply(conversation_id)
    assert [(p["type"], p["call_id"]) for p in reply.parts if p["type"] in ("tool_call", "tool_result")] == [
        ("tool_call", "call_p1"), ("tool_result", "call_p1"), ("tool_call", "call_p2"), ("tool_result", "call_p2"),
    ]
    follow_up = items(scripted_provider.requests[1])
    if selector == "responses":
        assert kinds(follow_up)[-4:] == ["function_call", "function_call", "function_call_output", "function_call_output"]
    else:
        assert [len(m.get("tool_calls") or []) for m in follow_up][-3:] == [2, 0, 0]


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("web_search_sources"))
async def test_scenario_web_search_sources_are_asked_for_kept_and_replayed(scripted_provider, settings, name, selector):
    await settings_update(web_search=True)
    _, conversation_id, _ = await run(scripted_provider, settings, name, selector, "How do bees talk?", "More?")
    first, later = scripted_provider.requests
    assert first.body["include"] == ["reasoning.encrypted_content", "web_search_call.action.sources"]
    reply = await sync_to_async(
        lambda: Message.objects.filter(conversation_id=conversation_id, role=Role.ASSISTANT).order_by("seq").first()
    )()
    (search,) = [p["item"] for p in reply.parts if p["type"] == "output_item" and p["item"]["type"] == "web_search_call"]
    assert search["action"]["sources"] == [
        {"type": "url", "url": "https://example.org/bees"}, {"type": "url", "url": "https://example.net/hive"},
    ]
    wire = later.body["input"]
    assert kinds(wire)[-4:] == ["user", "web_search_call", "message", "user"]
    assert wire[-3] == {"type": "web_search_call", "id": search["id"], "status": "completed", "action": search["action"]}
    assert wire[-2]["content"][0]["annotations"][0]["url"] == "https://example.org/bees"


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("image_partials"))
async def test_scenario_image_partials_stream_and_the_item_is_kept_without_its_base64(
    scripted_provider, settings, name, selector
):
    await settings_update(image_generation=True)
    _, conversation_id, (events,) = await run(scripted_provider, settings, name, selector)
    images = [data for event, data in events if event == "image"]
    assert [d["status"] for d in images] == ["generating", "partial", "partial", "partial", "done"]
    reply = await last_reply(conversation_id)
    (kept,) = [p["item"] for p in reply.parts if p["type"] == "output_item" and p["item"]["type"] == "image_generation_call"]
    assert "result" not in kept and kept["status"] == "completed"
    (record,) = reply.metadata["generated_images"]
    assert record["item_id"] == kept["id"] and record["attachment_id"] == images[-1]["attachment_id"]


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("mid_stream_error"))
async def test_scenario_mid_stream_error_fails_the_reply_and_keeps_its_text(scripted_provider, settings, name, selector):
    _, conversation_id, (events,) = await run(scripted_provider, settings, name, selector)
    assert [name for name, _ in events][-2:] == ["error", "done"]
    reply = await last_reply(conversation_id)
    assert (reply.status, reply.error, reply.content) == (MessageStatus.FAILED, "provider_http_error", "Half a")


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("rate_limited_with_retry_after"))
async def test_scenario_429_with_retry_after_waits_then_answers(scripted_provider, settings, name, selector):
    _, conversation_id, (events,) = await run(scripted_provider, settings, name, selector)
    assert ("status", {"state": "waiting_for_provider", "retry_in": 0.0}) in events
    reply = await last_reply(conversation_id)
    assert (reply.status, reply.content) == (MessageStatus.COMPLETE, "After waiting.")
    assert len(scripted_provider.requests) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize(("name", "selector"), runs_on("invalid_encrypted_content"))
async def test_scenario_invalid_encrypted_content_is_dropped_and_retried_once(scripted_provider, settings, name, selector):
    settings.ELION_API_SELECTOR = selector
    settings.ELION_REASONING_CONTEXT = "all_turns"  # earlier turns' reasoning travels, so it can be refused
    scripted_provider.script(*scenario(name))
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "First")
    scripted_provider.reasoning_secret = "another-key"  # the provider no longer accepts what it handed out
    events = await send(client, conversation_id, "Second")
    assert events[-1][1]["status"] == "complete"
    refused, retried = scripted_provider.requests[1:]
    assert "reasoning" in kinds(items(refused)) and "reasoning" not in kinds(items(retried))
    reply = await last_reply(conversation_id)
    assert reply.metadata["reasoning_dropped"]["reason"] == "provider_reasoning_rejected"


# --- the request contract --------------------------------------------------------------------------------


def post_raw(provider, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        provider.base_url.removesuffix("/v1") + path, data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer test"}, method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
            return response.status, {}
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"}


def responses_body(**changes) -> dict:
    return {"model": "gpt-5.5", "stream": True, "input": [{"role": "user", "content": [IMAGE]}], **changes}


def test_the_request_validator_rejects_an_unknown_field(scripted_provider):
    status, body = post_raw(scripted_provider, "/v1/responses", responses_body(temperatur=0.2))
    assert status == 400
    assert body["error"] == {"message": "Unknown parameter: 'temperatur'.", "type": "invalid_request_error",
                             "param": "temperatur", "code": "unknown_parameter"}
    nested = responses_body(input=[{"role": "user", "content": [{**IMAGE, "caption": "x"}]}])
    assert post_raw(scripted_provider, "/v1/responses", nested)[1]["error"]["param"] == "input[0].content[0].caption"
    chat = {"model": "gpt-5.5", "stream": True, "messages": [{"role": "user", "content": "hi", "phase": "x"}]}
    status, body = post_raw(scripted_provider, "/v1/chat/completions", chat)
    assert (status, body["error"]["code"], body["error"]["param"]) == (400, "unknown_parameter", "messages[0].phase")


def test_the_request_validator_rejects_an_image_without_detail(scripted_provider):
    no_detail = {k: v for k, v in IMAGE.items() if k != "detail"}
    status, body = post_raw(scripted_provider, "/v1/responses", responses_body(input=[{"role": "user", "content": [no_detail]}]))
    assert status == 400
    assert body["error"]["code"] == "missing_required_parameter"
    assert body["error"]["message"] == "Missing required parameter: 'input[0].content[0].detail'."
    assert scripted_provider.requests[-1].body["input"][0]["content"][0] == no_detail  # recorded all the same


def test_the_request_validator_rejects_a_wrong_reasoning_summary(scripted_provider):
    status, body = post_raw(scripted_provider, "/v1/responses", responses_body(reasoning={"summary": "brief"}))
    assert status == 400
    assert body["error"] == {
        "message": "Invalid value: 'brief'. Supported values are: 'auto', 'concise', and 'detailed'.",
        "type": "invalid_request_error", "param": "reasoning.summary", "code": "invalid_value",
    }


def test_the_request_validator_accepts_a_well_formed_body(scripted_provider):
    body = responses_body(reasoning={"summary": "auto", "effort": "low"}, include=["reasoning.encrypted_content"],
                          store=False, prompt_cache_key="k", prompt_cache_retention="24h")
    assert post_raw(scripted_provider, "/v1/responses", body)[0] == 200


@pytest.mark.asyncio
async def test_the_sdk_sees_the_validators_answer_as_the_apis_400(scripted_provider):
    import openai

    client = openai.AsyncOpenAI(base_url=scripted_provider.base_url, api_key="test", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="gpt-5.5", input="hi", extra_body={"verbosity": "low"})
    assert caught.value.code == "unknown_parameter" and caught.value.param == "verbosity"
