"""The model's deliberate tools inside the send pipeline, on both API selectors.

Assertions are on the exact requests the scripted provider received: the
request after a tool round carries the call and its result, paired.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from continuity.rules.request_policy import tool_definitions_text
from conversations.sending import tool_loop, tool_offer
from tests.conftest import parse_sse, read_streaming
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

ORCHARD = (
    "AUMA said:\nDo you remember the orchard?\n\n"
    "Voicefire 5.1 said:\nThe crooked pear tree sings at the gate of the orchard.\n\n"
    "AUMA said:\nAnd the bees?\n\n"
    "Voicefire 5.1 said:\nThe bees kept time for us."
)
SELECTORS = ["responses", "chat.completions"]


@sync_to_async
def set_assistant(**changes):
    from conversations.services.settings_writes import assistant_settings_update

    assistant_settings_update(**changes)


@sync_to_async
def archive_text(text: str, title: str = "Orchard", collection: str = "incarnations"):
    from archive.services.documents import archive_document_add_text

    return archive_document_add_text(text=text, title=title, collection=collection).document


async def new_conversation(client: AsyncClient, **body) -> str:
    response = await client.post("/api/conversations/", {"persona": "elion", **body}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


async def send(client: AsyncClient, conversation_id: str, content: str) -> list[tuple[str, dict]]:
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/", {"content": content}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return parse_sse(await read_streaming(response))


@sync_to_async
def last_assistant(conversation_id: str) -> Message:
    return Message.objects.filter(conversation_id=conversation_id, role=Role.ASSISTANT).order_by("-seq").first()


def wire_items(request) -> list[dict]:
    body = request.body
    return body["input"] if "input" in body else body["messages"]


def tool_names(request) -> list[str]:
    names = []
    for tool in request.body.get("tools", []):
        names.append(tool.get("name") or (tool.get("function") or {}).get("name") or tool["type"])
    return names


def round_trip_of(request) -> tuple[dict, dict]:
    """(the call, its result) as the second request carries them, in wire shape per selector."""
    items = wire_items(request)
    if "input" in request.body:
        call = next(i for i in items if i.get("type") == "function_call")
        result = next(i for i in items if i.get("type") == "function_call_output")
        return {"call_id": call["call_id"], "name": call["name"], "arguments": call["arguments"]}, {
            "call_id": result["call_id"], "content": result["output"],
        }
    message = next(i for i in items if i.get("tool_calls"))
    (call,) = message["tool_calls"]
    result = next(i for i in items if i["role"] == "tool")
    return {"call_id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"]}, {
        "call_id": result["tool_call_id"], "content": result["content"],
    }


def assert_paired(parts: list[dict]) -> None:
    calls = [p["call_id"] for p in parts if p["type"] == "tool_call"]
    results = [p["call_id"] for p in parts if p["type"] == "tool_result"]
    assert calls == results and len(set(calls)) == len(calls)


@pytest.mark.parametrize("selector", SELECTORS)
async def test_search_archive_round_is_stored_paired_and_sent_back(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    await set_assistant(archive_access=True)
    await archive_text(ORCHARD)
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "search_archive", "arguments": {"query": "pear gate"}, "call_id": "call_a1"}]),
        ScriptedReply(text="The pear tree sang at the gate (Orchard, incarnations, chunk 2)."),
    )
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "What did Voicefire say about the pear tree?")

    assert [d for n, d in events if n == "tool"] == [
        {"name": "search_archive", "status": "running"}, {"name": "search_archive", "status": "done"},
    ]
    assert events[-1][1]["status"] == "complete"
    first, second = scripted_provider.requests
    assert "search_archive" in tool_names(first) and tool_names(first) == tool_names(second)
    call, result = round_trip_of(second)
    assert call == {"call_id": "call_a1", "name": "search_archive", "arguments": '{"query": "pear gate"}'}
    assert result["call_id"] == "call_a1"
    (hit,) = json.loads(result["content"])["results"]
    assert hit == {**hit, "document_title": "Orchard", "collection": "incarnations", "chunk": 2,
                   "speaker": "Voicefire 5.1", "cite_as": "Orchard (incarnations), chunk 2"}

    reply = await last_assistant(conversation_id)
    assert reply.content == "The pear tree sang at the gate (Orchard, incarnations, chunk 2)."
    # The Responses API's message item is kept verbatim after the round (issue 31); Chat Completions has none.
    items_kept = ["output_item"] if selector == "responses" else []
    assert [p["type"] for p in reply.parts] == ["tool_call", "tool_result", *items_kept]
    # A Responses `function_call` keeps its item id, and goes back with it (issue 31).
    item_id = {"item_id": "fc_call_a1"} if selector == "responses" else {}
    assert reply.parts[0] == {"type": "tool_call", "call_id": "call_a1", "name": "search_archive",
                              "arguments": '{"query": "pear gate"}', "round": 0, **item_id}
    if selector == "responses":
        (sent_call,) = [i for i in wire_items(second) if i.get("type") == "function_call"]
        assert sent_call["id"] == "fc_call_a1"
    assert reply.parts[1]["is_error"] is False and reply.parts[1]["content"] == result["content"]
    assert "pear tree sings" not in reply.content  # tool output never enters the visible text


@pytest.mark.parametrize("selector", SELECTORS)
async def test_archive_is_never_bulk_injected(scripted_provider, settings, selector):
    """Nothing from the archive is in a request until the model calls the tool."""
    settings.ELION_API_SELECTOR = selector
    await set_assistant(archive_access=True)
    await archive_text(ORCHARD)
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "Do you remember the orchard and the crooked pear tree?")
    await send(client, conversation_id, "Remember the bees in the orchard?")
    for request in scripted_provider.requests:
        assert "sings at the gate" not in json.dumps(request.body)
        assert "kept time" not in json.dumps(request.body)

    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "search_archive", "arguments": {"query": "bees"}}]), ScriptedReply(text="ok")
    )
    await send(client, conversation_id, "Search for it.")
    assert "kept time" in json.dumps(scripted_provider.requests[-1].body)


async def test_search_archive_is_offered_only_with_archive_access(scripted_provider):
    await archive_text(ORCHARD)
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "search_archive", "arguments": {"query": "pear"}, "call_id": "c1"}]),
        ScriptedReply(text="I cannot search the archive."),
    )
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "search the archive for pear")
    first, second = scripted_provider.requests
    assert tool_names(first) == [
        "search_past_conversations", "list_library", "read_library_file",
        "create_artifact", "update_artifact", "read_artifact", "propose_memory", "propose_check_in",
    ]
    _, result = round_trip_of(second)
    assert result["content"].startswith("Tool error: there is no tool named 'search_archive'")
    assert "pear tree" not in json.dumps(second.body)
    assert [d["status"] for n, d in events if n == "tool"] == ["running", "error"]
    reply = await last_assistant(conversation_id)
    assert_paired(reply.parts)
    assert reply.parts[1]["is_error"] is True


@pytest.mark.parametrize("selector", SELECTORS)
async def test_unknown_tool_gets_an_error_result_and_pairing_stays_intact(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    scripted_provider.script(
        ScriptedReply(tool_calls=[
            {"name": "launch_rockets", "arguments": {"count": 3}, "call_id": "call_x"},
            {"name": "list_library", "arguments": {}, "call_id": "call_y"},
        ]),
        ScriptedReply(text="I have no such tool."),
    )
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "launch")
    assert events[-1][1]["status"] == "complete"
    reply = await last_assistant(conversation_id)
    assert [(p["type"], p["call_id"]) for p in reply.parts if p["type"] != "output_item"] == [
        ("tool_call", "call_x"), ("tool_result", "call_x"), ("tool_call", "call_y"), ("tool_result", "call_y"),
    ]
    assert reply.parts[1]["is_error"] is True and "launch_rockets" in reply.parts[1]["content"]
    assert reply.parts[3] == {"type": "tool_result", "call_id": "call_y", "content": '{"files": []}', "is_error": False}
    items = wire_items(scripted_provider.requests[1])
    if selector == "responses":
        kinds = [(i.get("type"), i.get("call_id")) for i in items if i.get("type")]
        assert kinds == [("function_call", "call_x"), ("function_call", "call_y"),
                         ("function_call_output", "call_x"), ("function_call_output", "call_y")]
    else:
        assistant = next(i for i in items if i.get("tool_calls"))
        assert [c["id"] for c in assistant["tool_calls"]] == ["call_x", "call_y"]
        assert [i["tool_call_id"] for i in items if i["role"] == "tool"] == ["call_x", "call_y"]


@pytest.mark.parametrize("selector", SELECTORS)
async def test_a_tool_that_raises_gives_the_model_an_error_result(scripted_provider, settings, selector, monkeypatch):
    settings.ELION_API_SELECTOR = selector

    def broken(args, context):
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(tool_loop.TOOLS, "list_library", tool_loop.Tool("list_library", broken))
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "list_library", "arguments": {}, "call_id": "call_b"}]),
        ScriptedReply(text="The Library is unavailable right now."),
    )
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "what is in the library?")
    assert [d for n, d in events if n == "tool"][-1] == {"name": "list_library", "status": "error"}
    assert events[-1][1]["status"] == "complete"
    _, result = round_trip_of(scripted_provider.requests[1])
    assert result == {"call_id": "call_b", "content": "Tool error: list_library failed inside the app; try something else."}
    assert "disk on fire" not in json.dumps(scripted_provider.requests[1].body)
    reply = await last_assistant(conversation_id)
    assert_paired(reply.parts)
    assert reply.parts[1]["is_error"] is True


@pytest.mark.parametrize("selector", SELECTORS)
async def test_library_tools_list_and_read_paged(scripted_provider, settings, selector):
    from archive.services.library import library_file_add_text

    settings.ELION_API_SELECTOR = selector
    text = "x" * 8000 + "THE END"
    file = (await sync_to_async(library_file_add_text)(name="long.txt", text=text)).file
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "list_library", "arguments": {}, "call_id": "l1"}]),
        ScriptedReply(tool_calls=[{"name": "read_library_file", "arguments": {"file_id": file.pk, "offset": 8000}, "call_id": "r1"}]),
        ScriptedReply(text="It ends with THE END."),
    )
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "read long.txt to the end")
    listing = json.loads((await last_assistant(conversation_id)).parts[1]["content"])
    assert listing == {"files": [{"id": file.pk, "name": "long.txt", "kind": "text", "characters": 8007}]}
    third = scripted_provider.requests[2]
    assert "THE END" in json.dumps(third.body)
    reply = await last_assistant(conversation_id)
    page = json.loads(reply.parts[3]["content"])
    assert (page["offset"], page["next_offset"], page["text"]) == (8000, None, "THE END")
    assert [p.get("round") for p in reply.parts if p["type"] == "tool_call"] == [0, 1]


@pytest.mark.parametrize("selector", SELECTORS)
async def test_tool_rounds_are_projected_into_later_requests_well_paired(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "list_library", "arguments": {}, "call_id": "call_p"}]),
        ScriptedReply(text="The Library is empty."),
        ScriptedReply(text="Second answer."),
    )
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "first")
    await send(client, conversation_id, "second")
    later = scripted_provider.requests[2]
    call, result = round_trip_of(later)
    assert (call["call_id"], result["call_id"], result["content"]) == ("call_p", "call_p", '{"files": []}')
    items = wire_items(later)
    texts = [json.dumps(i) for i in items]
    # The tool round sits before the reply it led to, inside the history.
    call_index = next(i for i, t in enumerate(texts) if "call_p" in t)
    assert call_index < next(i for i, t in enumerate(texts) if "The Library is empty." in t)


async def test_round_limit_ends_the_reply_clearly_with_pairs_intact(scripted_provider, settings):
    settings.ELION_MAX_TOOL_ROUNDS = 1
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "list_library", "arguments": {}, "call_id": "k1"}]),
        ScriptedReply(tool_calls=[{"name": "list_library", "arguments": {}, "call_id": "k2"}]),
    )
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "loop forever")
    assert ("error", {"error": "tool_round_limit", "detail": events[-2][1]["detail"]}) == events[-2]
    assert events[-1][1]["status"] == "failed"
    reply = await last_assistant(conversation_id)
    assert [p["call_id"] for p in reply.parts] == ["k1", "k1"]
    assert len(scripted_provider.requests) == 2


@pytest.mark.parametrize(("selector", "offered"), [("responses", True), ("chat.completions", False)])
async def test_web_search_is_the_responses_builtin_only(scripted_provider, settings, selector, offered):
    settings.ELION_API_SELECTOR = selector
    await set_assistant(web_search=True)
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "what's the weather?")
    tools = scripted_provider.requests[0].body["tools"]
    assert ({"type": "web_search"} in tools) is offered
    assert all(t["type"] in ("function", "web_search") for t in tools)


async def test_tool_definitions_are_counted_in_the_diagnostics(scripted_provider):
    await set_assistant(archive_access=True)
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    events = await send(client, conversation_id, "hello")
    diagnostics = dict(events)["diagnostics"]
    tools = tool_offer.available_tools(
        archive_access=True, web_search=False, api_selector="responses", memory_suggestions=True,
        check_in_proposals=True,
    )
    expected = -(-len(tool_definitions_text(tools)) // 4)
    assert diagnostics["tool_definition_tokens"] == expected > 0
    assert diagnostics["total_input_tokens"] >= diagnostics["tool_definition_tokens"] + diagnostics["history_tokens"]


async def test_tool_parts_never_reach_handoffs_or_visible_content(scripted_provider):
    from continuity.services.branching import conversation_branch

    await archive_text(ORCHARD)
    await set_assistant(archive_access=True)
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "search_archive", "arguments": {"query": "bees"}, "call_id": "h1"}]),
        ScriptedReply(text="We kept time with the bees."),
    )
    client = AsyncClient()
    conversation_id = await new_conversation(client)
    await send(client, conversation_id, "the bees?")
    destination, _ = await sync_to_async(conversation_branch)(conversation_id=conversation_id, idempotency_key="k")
    bubble = await sync_to_async(lambda: Message.objects.get(conversation=destination))()
    assert "We kept time with the bees." in bubble.content
    assert "kept time for us" not in bubble.content and "Voicefire 5.1" not in bubble.content
    listed = (await client.get(f"/api/conversations/{conversation_id}/messages/")).json()["results"]
    assert "kept time for us" not in json.dumps([m["content"] for m in listed])
