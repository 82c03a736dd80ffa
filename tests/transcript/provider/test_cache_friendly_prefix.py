"""Cache-friendly requests (issue "GPT-5.5 the way the Responses API means it"): the static prompt and the
history come first and the fresh dynamic context last, so each request of a thread begins, byte for byte,
with what the previous one sent (its dynamic context aside), under the same `prompt_cache_key` and tools.

What may change that prefix is named here and nowhere else: the prompt refreshes the seed names (a settings
save, an edit or deletion of a memory in the thread's snapshot, an explicit refresh, a visibility change
that changes what the prompt may keep) and, past the input budget, the trimming of the oldest turns. Adding
a memory, a retry, a rewind, a pinned character or a recall are not among them.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from conversations.services.characters import character_create
from memories.services.memory_writes import memory_add, memory_edit
from tests.support.scripted_provider import ScriptedReply

pytestmark = pytest.mark.django_db(transaction=True)


def new_conversation() -> str:
    response = Client().post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def send(conversation_id: str, content: str, **extra) -> dict:
    response = Client().post(
        f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content, **extra},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()


def wire(items: list[dict]) -> str:
    """The items as they travel: key order and all (the SDK serialises `extra_body` as given)."""
    return json.dumps(items, ensure_ascii=False)


def without_dynamic_context(request) -> list[dict]:
    """A request's input less its dynamic context (a trailing system message after the turns), if any."""
    items = request.body["input"]
    return items[:-1] if len(items) > 1 and items[-1].get("role") == "system" else items


def assert_begins_with(later, earlier) -> None:
    prefix = without_dynamic_context(earlier)
    assert wire(later.body["input"][: len(prefix)]) == wire(prefix)
    assert later.body["prompt_cache_key"] == earlier.body["prompt_cache_key"]
    assert wire(later.body.get("tools", [])) == wire(earlier.body.get("tools", []))


def test_cache_friendly_consecutive_sends_share_a_byte_identical_prefix(scripted_provider):
    memory_add(text="AUMA keeps bees on the roof.")
    echo = character_create(name="Echo", description="A quiet lighthouse keeper.")
    conversation_id = new_conversation()
    scripted_provider.script(*[ScriptedReply(text=f"Reply {n}.", reasoning=[f"thinking {n}"]) for n in range(4)])
    send(conversation_id, "Good morning")
    send(conversation_id, "Tell me a story about the keeper", pinned_character_id=echo.pk)  # a dynamic context
    assert scripted_provider.requests[1].body["input"][-1]["content"].startswith("=== PINNED CHARACTER")
    memory_add(text="AUMA is learning the cello.")  # future threads only: this prompt stays as it was
    send(conversation_id, "And then?")
    send(conversation_id, "One more")
    requests = scripted_provider.requests
    for earlier, later in zip(requests, requests[1:], strict=False):
        assert_begins_with(later, earlier)
        assert len(later.body["input"]) > len(without_dynamic_context(earlier))


def test_cache_friendly_a_retry_and_a_rewind_keep_the_prefix(scripted_provider):
    conversation_id = new_conversation()
    scripted_provider.script(*[ScriptedReply(text=f"Reply {n}.") for n in range(5)])
    first = send(conversation_id, "One")
    send(conversation_id, "Two")
    second = scripted_provider.last_request()
    retry = Client().post(
        f"/api/conversations/{conversation_id}/messages/{scripted_reply_id(conversation_id)}/retry/?stream=false"
    )
    assert retry.status_code == 200, retry.content
    assert wire(scripted_provider.last_request().body["input"]) == wire(second.body["input"])  # the same request
    rewind = Client().post(
        f"/api/conversations/{conversation_id}/rewind/", {"message_id": first["assistant_message"]["id"]},
        content_type="application/json",
    )
    assert rewind.status_code == 200, rewind.content
    send(conversation_id, "Two, differently")
    after_rewind = scripted_provider.last_request()
    # Everything up to the turn the rewind returned to is what the second request sent.
    kept = without_dynamic_context(second)[:-1]
    assert wire(after_rewind.body["input"][: len(kept)]) == wire(kept)
    assert after_rewind.body["prompt_cache_key"] == second.body["prompt_cache_key"]


def scripted_reply_id(conversation_id: str) -> str:
    body = Client().get(f"/api/conversations/{conversation_id}/messages/").json()
    return [m for m in body["results"] if m["role"] == "assistant"][-1]["id"]


def test_cache_friendly_editing_a_memory_in_the_snapshot_is_a_named_prompt_refresh(scripted_provider):
    bees = memory_add(text="AUMA keeps bees on the roof.")
    conversation_id = new_conversation()
    scripted_provider.script(*[ScriptedReply(text=f"Reply {n}.") for n in range(2)])
    send(conversation_id, "Good morning")
    before = scripted_provider.last_request()
    memory_edit(memory_id=bees.pk, changes={"text": "AUMA keeps three hives on the roof."})
    send(conversation_id, "What do I keep?")
    after = scripted_provider.last_request()
    # The stored prompt (the first item) was refreshed, as the seed says; the turns after it are unchanged.
    assert "three hives" in after.body["input"][0]["content"] and "three hives" not in before.body["input"][0]["content"]
    assert wire(after.body["input"][1 : len(before.body["input"])]) == wire(before.body["input"][1:])
    assert after.body["prompt_cache_key"] == before.body["prompt_cache_key"]
