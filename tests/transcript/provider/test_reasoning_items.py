"""Reasoning items kept and carried (issue "GPT-5.5 the way the Responses API means it"): reasoning output
items are stored as structured parts of the assistant message, in order, never as speech; every follow-up
request of a tool round carries the reasoning that preceded its calls, in its place; later turns carry them
too; a stored item the provider refuses is dropped and the request retried once without it. Real `openai`
SDK against the scripted provider, which signs the encrypted content it hands out and refuses what it did
not sign, and refuses a function-call output without its call, as the real API does.
"""

from __future__ import annotations

import uuid

import openai
import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client

from tests.conftest import parse_sse, read_streaming
from tests.support.factories import sent_and_answered as send
from tests.support.factories import thread
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message

pytestmark = pytest.mark.django_db(transaction=True)

LIBRARY_CALL = {"name": "list_library", "arguments": {}, "call_id": "call_r1"}


def streamed_send(conversation, content: str) -> list[tuple[str, dict]]:
    """A streaming send through the ASGI path, its SSE events in order."""

    async def run() -> bytes:
        response = await AsyncClient().post(
            f"/api/conversations/{conversation.pk}/messages/", {"content": content}, content_type="application/json"
        )
        assert response.status_code == 200, response.content
        return await read_streaming(response)

    return parse_sse(async_to_sync(run)())


def kinds(items: list[dict]) -> list[str]:
    return [item.get("type") or item["role"] for item in items]


def tool_round_then_answer() -> tuple[ScriptedReply, ScriptedReply]:
    return (
        ScriptedReply(reasoning=["Weighing whether the Library helps."], tool_calls=[LIBRARY_CALL]),
        ScriptedReply(reasoning=["The Library is empty; answer plainly."], text="Nothing there yet."),
    )


def test_reasoning_items_are_stored_as_parts_in_order_and_never_as_speech(scripted_provider):
    scripted_provider.script(*tool_round_then_answer())
    body = send(thread(), "Look in the Library")
    reply = Message.objects.get(pk=body["assistant_message"]["id"])
    assert reply.content == "Nothing there yet."
    assert [(p["type"], p.get("round")) for p in reply.parts] == [
        ("reasoning", 0), ("tool_call", 0), ("tool_result", None), ("reasoning", 1), ("output_item", 1),
    ]
    first, last = reply.parts[0], reply.parts[3]
    assert first["summary"] == ["Weighing whether the Library helps."] and first["encrypted_content"].startswith("enc_")
    assert last["summary"] == ["The Library is empty; answer plainly."]
    assert "Weighing" not in body["assistant_message"]["content"]


def test_reasoning_items_are_carried_into_the_tool_round_follow_up_in_their_place(scripted_provider):
    scripted_provider.script(*tool_round_then_answer())
    send(thread(), "Look in the Library")
    first, follow_up = scripted_provider.requests
    reasoning = next(item for item in scripted_provider_output(first) if item["type"] == "reasoning")
    items = follow_up.body["input"]
    assert kinds(items)[-3:] == ["reasoning", "function_call", "function_call_output"]
    carried = items[-3]
    assert carried["id"] == reasoning["id"] and carried["encrypted_content"] == reasoning["encrypted_content"]
    assert carried["summary"] == [{"type": "summary_text", "text": "Weighing whether the Library helps."}]
    # The follow-up is the first request plus this reply's own items: the cached prefix holds.
    assert items[: len(first.body["input"])] == first.body["input"]


def scripted_provider_output(request) -> list[dict]:
    """The reasoning items the scripted provider handed out for `request`, rebuilt from what the app stored."""
    reply = Message.objects.filter(role="assistant").order_by("-seq").first()
    return [{"type": "reasoning", "id": p["id"], "encrypted_content": p["encrypted_content"]}
            for p in reply.parts if p["type"] == "reasoning"]


def test_reasoning_items_are_carried_into_the_next_turn_in_order(scripted_provider, settings):
    settings.ELION_REASONING_CONTEXT = "all_turns"  # a model that renders earlier turns' reasoning
    scripted_provider.script(*tool_round_then_answer(), ScriptedReply(text="Still nothing."))
    conversation = thread()
    send(conversation, "Look in the Library")
    send(conversation, "And now?")
    items = scripted_provider.last_request().body["input"]
    assert kinds(items)[1:] == [
        "user", "reasoning", "function_call", "function_call_output", "reasoning", "message", "user",
    ]
    assert [item["summary"][0]["text"] for item in items if item.get("type") == "reasoning"] == [
        "Weighing whether the Library helps.", "The Library is empty; answer plainly.",
    ]


def test_earlier_turns_reasoning_stays_out_of_requests_by_default(scripted_provider, settings):
    """GPT-5.5 renders only the current turn's reasoning (`reasoning.context` "current_turn"): the items of
    turns before the last user message stay stored, and out of requests (docs/provider.md)."""
    assert settings.ELION_REASONING_CONTEXT == "current_turn"
    scripted_provider.script(*tool_round_then_answer(), ScriptedReply(text="Still nothing."))
    conversation = thread()
    send(conversation, "Look in the Library")
    follow_up = scripted_provider.requests[1].body["input"]
    assert kinds(follow_up)[-3:] == ["reasoning", "function_call", "function_call_output"]  # the current turn's
    send(conversation, "And now?")
    items = scripted_provider.last_request().body["input"]
    assert kinds(items)[1:] == ["user", "function_call", "function_call_output", "message", "user"]
    reply = Message.objects.filter(role="assistant").order_by("seq").first()
    assert [p["type"] for p in reply.parts].count("reasoning") == 2  # kept in the row all the same


def test_a_rejected_reasoning_item_is_dropped_and_the_request_retried_once_without_it(scripted_provider, settings):
    settings.ELION_REASONING_CONTEXT = "all_turns"
    scripted_provider.script(ScriptedReply(reasoning=["First thoughts."], text="First."))
    conversation = thread()
    first = send(conversation, "Hello")
    scripted_provider.reasoning_secret = "another key or model"  # the provider no longer accepts them
    scripted_provider.script(ScriptedReply(text="Second."))
    body = send(conversation, "Hello again")
    assert body["assistant_message"]["status"] == "complete" and body["assistant_message"]["content"] == "Second."
    refused, retried = scripted_provider.requests[1:]
    assert "reasoning" in kinds(refused.body["input"]) and "reasoning" not in kinds(retried.body["input"])
    assert body["assistant_message"]["metadata"]["reasoning_dropped"] == {
        "reason": "provider_reasoning_rejected", "messages": 1,
    }
    earlier = Message.objects.get(pk=first["assistant_message"]["id"])
    assert earlier.parts[0]["encrypted_content"] is None and earlier.parts[0]["summary"] == ["First thoughts."]
    # Dropped for good: the next send carries none and needs no retry.
    scripted_provider.script(ScriptedReply(text="Third."))
    send(conversation, "Once more")
    assert len(scripted_provider.requests) == 4
    assert "reasoning" not in kinds(scripted_provider.last_request().body["input"])


def test_a_tool_round_follow_up_whose_reasoning_is_refused_is_sent_once_more_without_it(scripted_provider, settings):
    """Issue 41, item 12: under GPT-5.5's `current_turn` default the follow-up is the one request that carries
    reasoning (this reply's own, from its first round). Another deployment answering it cannot verify that
    content: the 400 `invalid_encrypted_content`, as the API sends it. The follow-up goes once more without it."""
    assert settings.ELION_REASONING_CONTEXT == "current_turn"
    first_round, answer = tool_round_then_answer()
    first_round.reasoning_secret_after = f"another deployment {uuid.uuid4()}"
    scripted_provider.script(first_round, answer)
    body = send(thread(), "Look in the Library")
    assert body["assistant_message"]["status"] == "complete"
    assert body["assistant_message"]["content"] == "Nothing there yet."
    opening, refused, retried = scripted_provider.requests
    assert kinds(refused.body["input"])[-3:] == ["reasoning", "function_call", "function_call_output"]
    assert kinds(retried.body["input"])[-2:] == ["function_call", "function_call_output"]
    assert "reasoning" not in kinds(retried.body["input"])
    assert body["assistant_message"]["metadata"]["reasoning_dropped"] == {
        "reason": "provider_reasoning_rejected", "messages": 1,
    }
    reply = Message.objects.get(pk=body["assistant_message"]["id"])
    refused_item = reply.parts[0]
    assert refused_item["encrypted_content"] is None and refused_item["dropped"] == "provider_reasoning_rejected"
    assert refused_item["summary"] == ["Weighing whether the Library helps."]
    assert reply.parts[3]["encrypted_content"].startswith("enc_")  # the answer's own, from the new deployment


def test_the_refusal_reads_as_the_api_sends_it(scripted_provider):
    first_round, _ = tool_round_then_answer()
    first_round.reasoning_secret_after = f"another deployment {uuid.uuid4()}"
    scripted_provider.script(first_round, ScriptedReply(status=400, error_message="Something else is wrong."))
    send(thread(), "Look in the Library")
    refused = scripted_provider.requests[1]
    sealed = next(item for item in refused.body["input"] if item.get("type") == "reasoning")["encrypted_content"]
    with pytest.raises(openai.BadRequestError) as caught:
        openai.OpenAI(api_key="k", base_url=scripted_provider.base_url).responses.create(
            model="gpt-5.5", input=refused.body["input"])
    assert caught.value.status_code == 400
    assert caught.value.body == {
        "message": f"The encrypted content {sealed[:4]}...{sealed[-4:]} could not be verified.",
        "type": "invalid_request_error", "param": None, "code": "invalid_encrypted_content",
    }


def test_a_rejected_reasoning_item_is_retried_only_once(scripted_provider, settings):
    settings.ELION_REASONING_CONTEXT = "all_turns"
    scripted_provider.script(ScriptedReply(reasoning=["Thoughts."], text="First."))
    conversation = thread()
    send(conversation, "Hello")
    scripted_provider.reasoning_secret = "rotated"
    # The retry without reasoning fails too (for another reason): the reply fails with that error.
    scripted_provider.script(ScriptedReply(status=400, error_message="Something else is wrong."))
    body = send(conversation, "Hello again")
    assert body["assistant_message"]["status"] == "failed"
    assert body["assistant_message"]["metadata"]["error"]["error"] == "provider_bad_request"
    assert len(scripted_provider.requests) == 3


def test_reasoning_items_are_left_out_of_chat_completions_requests(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"
    scripted_provider.script(ScriptedReply(tool_calls=[LIBRARY_CALL]), ScriptedReply(text="Done."))
    conversation = thread(binding=None)
    stored = thread(("user", "Earlier"), ("assistant", "Earlier reply"))  # a Responses reply with reasoning
    Message.objects.filter(conversation=stored, role="assistant").update(parts=[
        {"type": "reasoning", "id": "rs_x", "encrypted_content": "enc_x", "summary": ["s"], "round": 0},
    ])
    send(conversation, "Look")
    for request in scripted_provider.requests:
        assert all(m["role"] in ("system", "user", "assistant", "tool") for m in request.body["messages"])


def test_reasoning_summary_streams_as_its_own_event_and_the_thought_time_is_kept(scripted_provider):
    scripted_provider.script(ScriptedReply(reasoning=["Considering the question."], text="An answer."))
    conversation = thread()
    events = streamed_send(conversation, "Think first")
    names = [name for name, _ in events]
    reasoning = "".join(data["text"] for name, data in events if name == "reasoning")
    assert reasoning == "Considering the question."
    assert names.index("reasoning") < names.index("delta")
    reply = Message.objects.filter(conversation=conversation, role="assistant").get()
    assert isinstance(reply.metadata["thought_seconds"], float) and reply.metadata["thought_seconds"] >= 0


def test_no_reasoning_summary_is_asked_for_or_streamed_when_summaries_are_off(scripted_provider):
    Client().patch("/api/settings/", {"reasoning_summary_shown": False}, content_type="application/json")
    scripted_provider.script(ScriptedReply(reasoning=["Hidden thoughts."], text="An answer."))
    conversation = thread()
    events = streamed_send(conversation, "Think first")
    assert "reasoning" not in [name for name, _ in events]
    reply = Message.objects.filter(conversation=conversation, role="assistant").get()
    assert reply.parts[0]["summary"] == [] and reply.parts[0]["encrypted_content"]  # still carried, unsummarised


def test_scripted_provider_refuses_a_function_call_output_without_its_call(scripted_provider):
    client = openai.OpenAI(base_url=scripted_provider.base_url, api_key="test", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="No tool call found"):
        client.responses.create(
            model="gpt-5.5", input=[{"type": "function_call_output", "call_id": "call_missing", "output": "x"}]
        )


def test_reasoning_never_enters_handoffs_recall_search_or_the_markdown_export(scripted_provider):
    from continuity.models import ThreadHandoff

    scripted_provider.script(ScriptedReply(reasoning=["Zephyrine lanterns glow in the reasoning only."], text="Plain words."))
    source = thread(title="Lantern talk")
    send(source, "Tell me something")
    client = Client()
    # Branch / Fresh Chat and automatic New Chat continuity: built from speech only.
    branch = client.post(f"/api/conversations/{source.pk}/branch/", HTTP_IDEMPOTENCY_KEY="reasoning-branch")
    assert branch.status_code == 201, branch.content
    assert ThreadHandoff.objects.exists()
    assert all("Zephyrine" not in h.handoff for h in ThreadHandoff.objects.all())
    assert not Message.objects.filter(content__icontains="zephyrine").exists()
    # Past Conversation Search, and the Markdown export.
    assert client.get("/api/search/", {"q": "zephyrine"}).json()["results"] == []
    exported = client.get(f"/api/conversations/{source.pk}/export/", {"format": "markdown"})
    markdown = b"".join(exported.streaming_content).decode()
    assert "Plain words." in markdown and "Zephyrine" not in markdown
    # Keyword recall in a new thread (after its birth period) finds nothing of it.
    fresh = client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json").json()
    scripted_provider.script({"text": "hi"}, {"text": "hmm"})
    for content in ("hello there", "Do you remember the zephyrine lanterns?"):
        client.post(f"/api/conversations/{fresh['id']}/messages/?stream=false", {"content": content},
                    content_type="application/json")
    systems = [item["content"] for item in scripted_provider.last_request().body["input"] if item.get("role") == "system"]
    assert systems and not any("Zephyrine" in text for text in systems)
