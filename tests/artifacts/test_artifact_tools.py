"""Artifacts through the real send pipeline, on both API selectors: `create_artifact` stores a row with its
provenance, `update_artifact` adds a version (never overwrites), `read_artifact` is the only way back.

Assertions are on the rows and on the exact requests the scripted provider received.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from artifacts.models import Artifact, ArtifactVersion
from tests.support.factories import api_call
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, Role

pytestmark = pytest.mark.django_db(transaction=True)

SELECTORS = ["responses", "chat.completions"]
POEM = "# Orchard\n\nThe crooked pear tree\nkeeps the gate of the hum."
REVISED = "# Orchard\n\nThe crooked pear tree\nkeeps the gate, and the bees keep time."


def new_chat(client: Client) -> str:
    return api_call(client, "post", "/api/conversations/", {"persona": "elion"}, status=201)["id"]


def send(client: Client, conversation_id: str, content: str) -> dict:
    return api_call(client, "post", f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content})


def tool_names(request) -> list[str]:
    return [t.get("name") or (t.get("function") or {}).get("name") or t["type"] for t in request.body.get("tools", [])]


def tool_output(request) -> dict:
    """The request's last tool result, decoded, in either selector's wire shape."""
    if "input" in request.body:
        outputs = [i["output"] for i in request.body["input"] if i.get("type") == "function_call_output"]
    else:
        outputs = [i["content"] for i in request.body["messages"] if i["role"] == "tool"]
    return json.loads(outputs[-1])


def replies(conversation_id: str) -> list[Message]:
    return list(Message.objects.filter(conversation_id=conversation_id, role=Role.ASSISTANT).order_by("seq"))


@pytest.mark.parametrize("selector", SELECTORS)
def test_an_artifact_is_created_then_updated_into_a_second_version_with_provenance(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    client = Client()
    conversation_id = new_chat(client)
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "create_artifact", "call_id": "call_make",
                                   "arguments": {"title": "Orchard", "kind": "poem", "content": POEM}}]),
        ScriptedReply(text="Here is the orchard poem."),
    )
    send(client, conversation_id, "Write me a poem about the orchard.")

    first, second = scripted_provider.requests
    assert {"create_artifact", "update_artifact", "read_artifact"} <= set(tool_names(first))
    artifact = Artifact.objects.get()
    (reply,) = replies(conversation_id)
    assert (artifact.title, artifact.kind, artifact.tool_call_id) == ("Orchard", "poem", "call_make")
    assert (str(artifact.conversation_id), artifact.message_id) == (conversation_id, reply.id)
    assert tool_output(second) == {"artifact_id": artifact.pk, "title": "Orchard", "kind": "poem", "version": 1}

    scripted_provider.clear()
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "update_artifact", "call_id": "call_revise",
                                   "arguments": {"artifact_id": artifact.pk, "content": REVISED}}]),
        ScriptedReply(text="I added the bees."),
    )
    send(client, conversation_id, "Add the bees.")

    assert tool_output(scripted_provider.requests[1]) == {"artifact_id": artifact.pk, "title": "Orchard", "version": 2}
    _, revising_reply = replies(conversation_id)
    versions = list(ArtifactVersion.objects.filter(artifact=artifact).order_by("number"))
    assert [(v.number, v.content, v.message_id, v.tool_call_id) for v in versions] == [
        (1, POEM, reply.id, "call_make"), (2, REVISED, revising_reply.id, "call_revise"),
    ]
    body = api_call(client, "get", f"/api/artifacts/{artifact.pk}/")
    assert body["content"] == REVISED and body["versions"] == 2
    assert [(h["version"], h["content"], h["tool_call_id"]) for h in body["history"]] == [
        (1, POEM, "call_make"), (2, REVISED, "call_revise"),
    ]
    # The text is tool output: never the replies' speech.
    assert all("pear tree" not in m.content for m in replies(conversation_id))


@pytest.mark.parametrize("selector", SELECTORS)
def test_a_later_conversation_reaches_an_artifact_only_through_read_artifact(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    client = Client()
    source = new_chat(client)
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "create_artifact",
                                   "arguments": {"title": "Orchard", "kind": "poem", "content": POEM}}]),
        ScriptedReply(text="Done."),
    )
    send(client, source, "Write me a poem about the orchard.")
    artifact = Artifact.objects.get()

    later = new_chat(client)
    scripted_provider.clear()
    scripted_provider.script(
        ScriptedReply(tool_calls=[{"name": "read_artifact", "arguments": {}}]),
        ScriptedReply(tool_calls=[{"name": "read_artifact", "arguments": {"artifact_id": artifact.pk}}]),
        ScriptedReply(text="I found the poem."),
    )
    send(client, later, "Read me the orchard poem again.")

    asked, listed, read = scripted_provider.requests
    assert "pear tree" not in json.dumps(asked.body, ensure_ascii=False)
    assert [a["artifact_id"] for a in tool_output(listed)["artifacts"]] == [artifact.pk]
    assert "pear tree" not in json.dumps(listed.body, ensure_ascii=False)
    assert tool_output(read)["content"] == POEM and tool_output(read)["version"] == 1
