"""The visibility matrix (issue 6): every state × every channel, exactly as the seed says.

States of a source conversation S, each reached through the API transitions:
normal; hidden (its folder hidden); trashed; shielded (its folder hidden, then
made visible again); released (shielded, then the shield released).

Channels, asserted on what the scripted provider received and on API results:

| channel                                   | normal | hidden | trashed | shielded | released |
|-------------------------------------------|--------|--------|---------|----------|----------|
| New Chat prior-thread selection           |   in   |  out   |   out   |   out    |    in    |
| handoff capture (row + first request)     |   in   |  out   |   out   |   out    |    in    |
| injection of an already stored handoff    |   in   |  out   |   out   |   out    |    in    |
| automatic keyword recall                  |   in   |  out   |   out   |   out    |    in    |
| the model's search_past_conversations     |   in   |  out   |   out   |   out    |    in    |
| Past Conversation Search (default)        |   in   |  out   |   out   |   out    |    in    |
| Past Conversation Search, include shielded|   in   |  out   |   out   |   in     |    in    |

Seed: "Hidden or trashed conversations are excluded from: automatic prior-thread
selection and verbatim handoff capture; prior-thread handoff injection; automatic
keyword recall; previously saved static prompts after the visibility change."
Shielded: "excluded from automatic prior-thread selection, handoff injection,
automatic keyword recall, and ordinary/default past-conversation search. The
model's past-conversation search tool always excludes shielded material. The
app's visible Past Conversation Search control may include it only when Include
shielded conversations is explicitly enabled for that search ... does not
release the shield or change future eligibility."
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from continuity.models import ThreadHandoff
from continuity.rules.eligibility import (
    deliberate_search_sources,
    feeds_automatic_continuity,
    in_quarantine,
    outside_quarantine,
    quarantined,
)
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, Folder, Message, Role

STATES = ["normal", "hidden", "trashed", "shielded", "released"]
AUTOMATIC = {"normal", "released"}  # where every automatic channel may use S
WITH_SHIELDED_OPTION = {"normal", "released", "shielded"}

# S's words. Queries name "marigold"; the proof that S's text arrived is "quill stone",
# which only S's assistant turn contains (never a query, never the current thread).
S_USER = "Tell me about the marigold ledger."
S_ASSISTANT = "The marigold ledger sits under the quill stone."
PROOF = "quill stone"


@pytest.fixture
def client():
    return Client()


def api(client, method: str, path: str, body: dict | None = None, status: int = 200) -> dict:
    response = getattr(client, method)(path, body or {}, content_type="application/json")
    assert response.status_code == status, response.content
    return response.json()


def new_chat(client) -> dict:
    return api(client, "post", "/api/conversations/", {"persona": "elion"}, status=201)


def send(client, conversation_id: str, content: str) -> dict:
    return api(client, "post", f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content})


def make_source(client, thread) -> tuple[Conversation, int]:
    folder = api(client, "post", "/api/folders/", {"name": "Letters"}, status=201)
    source = thread(("user", S_USER), ("assistant", S_ASSISTANT), title="Marigold")
    api(client, "patch", f"/api/conversations/{source.id}/", {"folder_id": folder["id"]})
    return source, folder["id"]


def put_in_state(client, source: Conversation, folder_id: int, state: str) -> None:
    folder, conversation = f"/api/folders/{folder_id}/", f"/api/conversations/{source.id}"
    if state == "hidden":
        api(client, "patch", folder, {"hidden": True})
    elif state == "trashed":
        api(client, "post", f"{conversation}/trash/")
    elif state in ("shielded", "released"):
        api(client, "patch", folder, {"hidden": True})
        assert api(client, "patch", folder, {"hidden": False})["hidden"] is False
        assert api(client, "get", f"{conversation}/")["shielded"] is True
        if state == "released":
            assert api(client, "post", f"{conversation}/release-shield/")["shielded"] is False
    body = api(client, "get", f"{conversation}/")
    assert (body["trashed"], body["shielded"]) == (state == "trashed", state == "shielded")
    assert Folder.objects.get(pk=folder_id).hidden is (state == "hidden")


def system_prompt(request) -> str:
    first = request.body["input"][0]
    assert first["role"] == "system"
    return first["content"]


# --- New Chat prior-thread selection and handoff capture ---------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("state", STATES)
def test_new_chat_selection_and_capture(client, thread, scripted_provider, state):
    bystander = thread(("user", "an older bystander thread"), ("assistant", "bystander reply"))
    source, folder_id = make_source(client, thread)
    put_in_state(client, source, folder_id, state)
    included = state in AUTOMATIC

    body = new_chat(client)
    # Selection: S is the most recent thread, picked only when eligible.
    expected_source = source if included else bystander
    assert body["handoff"]["source_conversation_id"] == str(expected_source.id)
    # Capture: the stored handoff row.
    row = ThreadHandoff.objects.get(destination_id=body["id"])
    assert (PROOF in row.handoff) is included
    assert ("bystander reply" in row.handoff) is not included
    # What the provider receives on the very first send.
    send(client, body["id"], "Good morning")
    prompt = system_prompt(scripted_provider.requests[-1])
    assert (PROOF in prompt) is included
    assert ("bystander reply" in prompt) is not included


# --- injection of a handoff stored before the transition ----------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("state", STATES)
def test_injection_of_an_existing_stored_handoff(client, thread, scripted_provider, state):
    source, folder_id = make_source(client, thread)
    destination = new_chat(client)
    assert destination["handoff"]["source_conversation_id"] == str(source.id)
    send(client, destination["id"], "first")
    assert PROOF in system_prompt(scripted_provider.requests[-1])

    put_in_state(client, source, folder_id, state)
    included = state in AUTOMATIC
    # The stored prompt is already right when the transition's response arrives ...
    stored = Message.objects.get(conversation_id=destination["id"], role=Role.SYSTEM).content
    assert (PROOF in stored) is included
    # ... and the next send carries exactly that.
    send(client, destination["id"], "second")
    prompt = system_prompt(scripted_provider.requests[-1])
    assert (PROOF in prompt) is included
    assert ("VERBATIM_EXCHANGE_" in prompt) is included


# --- automatic keyword recall ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("state", STATES)
def test_automatic_keyword_recall(client, thread, scripted_provider, state):
    current = new_chat(client)  # before S exists: no handoff, so recall is the only way in
    assert current["handoff"] is None
    send(client, current["id"], "Hello there, how are you today?")  # past the birth period
    source, folder_id = make_source(client, thread)
    put_in_state(client, source, folder_id, state)

    send(client, current["id"], "Do you remember the marigold ledger we talked about?")
    request = json.dumps(scripted_provider.requests[-1].body, ensure_ascii=False)
    assert (PROOF in request) is (state in AUTOMATIC)
    if state in AUTOMATIC:
        assert "=== AUTO-RECALLED CONTEXT ===" in request


# --- the model's search_past_conversations tool ------------------------------------------------------


def tool_output(request) -> dict:
    items = request.body["input"]
    result = next(item for item in items if item.get("type") == "function_call_output")
    return json.loads(result["output"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("state", STATES)
def test_model_search_tool(client, thread, scripted_provider, state):
    current = new_chat(client)
    assert current["handoff"] is None
    source, folder_id = make_source(client, thread)
    put_in_state(client, source, folder_id, state)
    scripted_provider.script(
        ScriptedReply(tool_calls=[
            {"name": "search_past_conversations", "arguments": {"query": "marigold"}, "call_id": "call_m"},
        ]),
        ScriptedReply(text="Here is what I found."),
    )
    send(client, current["id"], "Could you look through our other threads for the ledger?")
    output = tool_output(scripted_provider.requests[-1])
    found = json.dumps(output, ensure_ascii=False)
    assert (PROOF in found) is (state in AUTOMATIC)
    assert ("Marigold" in [c["title"] for c in output["conversations"]]) is (state in AUTOMATIC)


# --- Past Conversation Search (the owner's deliberate search) ------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("state", STATES)
def test_past_conversation_search_with_and_without_shielded(client, thread, state):
    source, folder_id = make_source(client, thread)
    put_in_state(client, source, folder_id, state)

    def found(**params) -> list[dict]:
        results = api(client, "get", "/api/search/?" + "&".join(f"{k}={v}" for k, v in {"q": "marigold", **params}.items()))
        return [r for r in results["results"] if r["conversation_id"] == str(source.id)]

    default = found()
    assert bool(default) is (state in AUTOMATIC)
    assert found(include_shielded="false") == default
    with_shielded = found(include_shielded="true")
    assert bool(with_shielded) is (state in WITH_SHIELDED_OPTION)
    if with_shielded:
        assert {r["excerpt"] for r in with_shielded} == {S_USER, S_ASSISTANT}
        assert all(r["shielded"] is (state == "shielded") for r in with_shielded)
    # The option releases nothing and changes no future eligibility.
    source.refresh_from_db()
    assert source.shielded is (state == "shielded")
    assert feeds_automatic_continuity(source, persona="elion") is (state in AUTOMATIC)
    assert bool(found()) is (state in AUTOMATIC)


# --- One quarantine rule ---------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("state", STATES)
def test_a_hidden_folder_is_a_quarantine_boundary_one_rule_for_rows_and_queries(client, thread, state):
    """Seed: "A hidden folder is a quarantine boundary" (and the trash): the loaded row's state, the query
    condition and the pages' list agree in every state."""
    source, folder_id = make_source(client, thread)
    put_in_state(client, source, folder_id, state)
    source = Conversation.objects.select_related("folder").get(pk=source.pk)
    expected = state in ("hidden", "trashed")
    assert in_quarantine(source) is expected
    assert Conversation.objects.filter(quarantined(), pk=source.pk).exists() is expected
    assert outside_quarantine().filter(pk=source.pk).exists() is not expected
    assert deliberate_search_sources(include_shielded=True, include_private=True).filter(pk=source.pk).exists() is (
        not expected
    )
