"""Artifact text is tool output: it never enters a New Chat handoff, automatic keyword recall, the model's
past-conversation search or the archive by itself (issue 22, "Continuity")."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from archive.services.search import archive_search
from artifacts.models import ArtifactVersion
from continuity.models import ThreadHandoff
from tests.support.factories import api_call
from tests.support.scripted_provider import ScriptedReply

pytestmark = pytest.mark.django_db(transaction=True)

# The conversation's own words name the Marrowgate poem; only the artifact holds the PROOF.
ASK = "Write me a poem about the Marrowgate lantern."
SPOKEN = "I wrote the Marrowgate lantern poem for you."
ARTIFACT = "# Marrowgate\n\nThe lantern hums a saffron psalm\nover the drowned quay."
PROOF = "saffron psalm"


def new_chat(client: Client) -> dict:
    return api_call(client, "post", "/api/conversations/", {"persona": "elion"}, status=201)


def send(client: Client, conversation_id: str, content: str) -> dict:
    return api_call(client, "post", f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content})


def source_with_artifact(client: Client, scripted_provider) -> dict:
    source = new_chat(client)
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "create_artifact",
                                   "arguments": {"title": "Marrowgate", "kind": "poem", "content": ARTIFACT}}]),
        ScriptedReply(text=SPOKEN),
    )
    send(client, source["id"], ASK)
    assert ArtifactVersion.objects.get().content == ARTIFACT
    return source


def test_artifact_text_never_enters_a_new_chat_handoff(scripted_provider):
    client = Client()
    source = source_with_artifact(client, scripted_provider)

    destination = new_chat(client)
    assert destination["handoff"]["source_conversation_id"] == source["id"]
    handoff = ThreadHandoff.objects.get(destination_id=destination["id"]).handoff
    assert SPOKEN in handoff and PROOF not in handoff
    scripted_provider.clear()
    send(client, destination["id"], "Hello again.")
    request = json.dumps(scripted_provider.requests[-1].body, ensure_ascii=False)
    assert SPOKEN in request and PROOF not in request


def test_artifact_text_never_enters_keyword_recall_the_search_tool_or_the_archive(scripted_provider):
    client = Client()
    current = new_chat(client)  # before the source exists: no handoff, so recall is the only way in
    send(client, current["id"], "Hello there, how are you today?")  # past the birth period
    source_with_artifact(client, scripted_provider)

    scripted_provider.clear()
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "search_past_conversations", "arguments": {"query": "saffron psalm"}}]),
        ScriptedReply(text="Nothing by those words."),
    )
    send(client, current["id"], "Do you remember the Marrowgate lantern poem?")
    asked, searched = scripted_provider.requests
    request = json.dumps(asked.body, ensure_ascii=False)
    assert "=== AUTO-RECALLED CONTEXT ===" in request and "Marrowgate lantern poem for you" in request
    assert PROOF not in request
    result = next(i for i in searched.body["input"] if i.get("type") == "function_call_output")
    assert json.loads(result["output"]) == {"query": PROOF, "conversations": []}
    assert archive_search(PROOF, limit=5) == []
