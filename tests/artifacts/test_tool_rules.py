"""The artifact tools' rules, called as the reply calls them (`run_tool`): bad arguments are tool errors the
model reads, an update never overwrites, and `read_artifact` reaches only what automatic continuity may use."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from artifacts.models import Artifact, ArtifactVersion
from conversations.sending.tool_loop import ToolContext, run_tool
from conversations.sending.tool_offer import available_tools
from tests.support.factories import api_call, thread
from transcript.provider.gateway import ToolCallRequested

pytestmark = pytest.mark.django_db

TOOLS = available_tools(archive_access=False, web_search=False, api_selector="chat.completions")


def call(name: str, arguments: dict, call_id: str = "call_1") -> ToolCallRequested:
    return ToolCallRequested(call_id=call_id, name=name, arguments_json=json.dumps(arguments))


def reply_context(conversation) -> ToolContext:
    return ToolContext(conversation_id=conversation.id, persona=conversation.persona, message_id=conversation.head_id)


def create(conversation, content: str = "First light.", title: str = "Dawn") -> int:
    result = run_tool(call("create_artifact", {"title": title, "kind": "reflection", "content": content}),
                      offered=TOOLS, context=reply_context(conversation))
    assert not result.is_error, result.content
    return json.loads(result.content)["artifact_id"]


def read(conversation, arguments: dict):
    return run_tool(call("read_artifact", arguments), offered=TOOLS, context=reply_context(conversation))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"title": "Dawn", "kind": "sonnet", "content": "x"}, "kind must be one of poem, reflection, letter, story, other"),
        ({"title": " ", "kind": "poem", "content": "x"}, "title must be non-empty text"),
        ({"title": "Dawn", "kind": "poem", "content": ""}, "content must be non-empty Markdown text"),
        ({"title": "Dawn", "kind": "poem", "content": "x" * 12_001}, "content can be at most 12,000 characters"),
    ],
)
def test_bad_create_arguments_are_a_tool_error_and_store_nothing(arguments, message):
    conversation = thread(("user", "write"), ("assistant", ""))
    result = run_tool(call("create_artifact", arguments), offered=TOOLS, context=reply_context(conversation))
    assert result.is_error and message in result.content
    assert Artifact.objects.count() == 0


def test_an_update_adds_a_version_and_keeps_every_earlier_one():
    conversation = thread(("user", "write"), ("assistant", ""))
    artifact_id = create(conversation, "First light.")
    for text in ("Second light.", "Third light."):
        result = run_tool(call("update_artifact", {"artifact_id": artifact_id, "content": text}),
                          offered=TOOLS, context=reply_context(conversation))
        assert not result.is_error
    assert list(ArtifactVersion.objects.order_by("number").values_list("number", "content")) == [
        (1, "First light."), (2, "Second light."), (3, "Third light."),
    ]
    assert json.loads(read(conversation, {"artifact_id": artifact_id, "version": 1}).content)["content"] == "First light."
    assert json.loads(read(conversation, {"artifact_id": artifact_id}).content)["content"] == "Third light."
    missing = read(conversation, {"artifact_id": artifact_id, "version": 4})
    assert missing.is_error and "versions 1 to 3" in missing.content


def test_updating_an_unknown_artifact_is_a_tool_error():
    conversation = thread(("user", "write"), ("assistant", ""))
    result = run_tool(call("update_artifact", {"artifact_id": 999, "content": "x"}),
                      offered=TOOLS, context=reply_context(conversation))
    assert result.is_error and "No artifact has that id" in result.content
    assert ArtifactVersion.objects.count() == 0


def test_read_artifact_never_reaches_a_shielded_or_other_persona_conversations_artifacts():
    client = Client()
    shielded = thread(("user", "write"), ("assistant", ""))
    other_persona = thread(("user", "write"), ("assistant", ""), persona="clipboard")
    normal = thread(("user", "write"), ("assistant", ""))
    shielded_id, other_id, normal_id = create(shielded, title="Shielded"), create(other_persona), create(normal)
    folder = api_call(client, "post", "/api/folders/", {"name": "Quiet"}, status=201)
    api_call(client, "patch", f"/api/conversations/{shielded.id}/", {"folder_id": folder["id"]})
    api_call(client, "patch", f"/api/folders/{folder['id']}/", {"hidden": True})
    api_call(client, "patch", f"/api/folders/{folder['id']}/", {"hidden": False})
    assert api_call(client, "get", f"/api/conversations/{shielded.id}/")["shielded"] is True

    current = thread(("user", "read them"), ("assistant", ""))
    listed = json.loads(read(current, {}).content)["artifacts"]
    assert [a["artifact_id"] for a in listed] == [normal_id]
    for hidden_id in (shielded_id, other_id):
        result = read(current, {"artifact_id": hidden_id})
        assert result.is_error and "No artifact has that id" in result.content
        update = run_tool(call("update_artifact", {"artifact_id": hidden_id, "content": "x"}),
                          offered=TOOLS, context=reply_context(current))
        assert update.is_error
    # Its own conversation still reads it.
    assert not read(shielded, {"artifact_id": shielded_id}).is_error


def test_read_artifact_lists_by_words_in_the_title_or_text():
    conversation = thread(("user", "write"), ("assistant", ""))
    dawn, dusk = create(conversation, "Larks at first light.", "Dawn"), create(conversation, "Owls at last light.", "Dusk")
    assert [a["artifact_id"] for a in json.loads(read(conversation, {"query": "owls"}).content)["artifacts"]] == [dusk]
    assert [a["artifact_id"] for a in json.loads(read(conversation, {"query": "DAWN"}).content)["artifacts"]] == [dawn]
    assert json.loads(read(conversation, {"query": "light larks"}).content)["artifacts"][0]["artifact_id"] == dawn
