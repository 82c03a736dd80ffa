"""The tools themselves and the projection of stored tool parts (no provider involved)."""

from __future__ import annotations

import json

import pytest

from conversations.sending.tool_loop import (
    ToolContext,
    past_conversation_search,
    run_tool,
)
from conversations.sending.tool_offer import available_tools
from transcript.append import APPENDED_FIELDS, message_append
from transcript.models import Folder, Message, MessageKind, MessageStatus
from transcript.provider.gateway import ToolCallRequested
from transcript.tool_pairing import INTERRUPTED_RESULT, project_tool_parts

pytestmark = pytest.mark.django_db

ALL_TOOLS = available_tools(archive_access=True, web_search=False, api_selector="responses")


def call(name: str, arguments, call_id: str = "c1") -> ToolCallRequested:
    return ToolCallRequested(call_id, name, arguments if isinstance(arguments, str) else json.dumps(arguments))


def test_past_search_reads_only_eligible_live_speech_of_other_conversations(make_conversation, make_turns):
    current = make_conversation(title="Now")
    make_turns(current, ("user", "the lantern here and now"))
    normal = make_conversation(title="River night")
    asked, answered = make_turns(normal, ("user", "Light the lantern?"), ("assistant", "The lantern is lit."))
    # A rewound-away branch of the same conversation.
    make_turns(normal, ("user", "lantern on the abandoned branch"), parent=answered)
    normal.head = answered
    normal.save(update_fields=["head"])
    # A handoff bubble and a stored prompt that mention it.
    (bubble,) = make_turns(normal, ("assistant", "### Continued from “x”\n\nAUMA said:\nlantern quoted"))
    Message.objects.filter(pk=bubble.pk).update(kind=MessageKind.HANDOFF_ARTIFACT)
    message_append(conversation=normal, parent=None, role="system", binding=None, make_head=False,
                   kind=MessageKind.STATIC_PROMPT, content="lantern in the system prompt")
    normal.head = answered
    normal.save(update_fields=APPENDED_FIELDS)
    (failed,) = make_turns(normal, ("assistant", "lantern in a failed reply"), parent=answered)
    Message.objects.filter(pk=failed.pk).update(status=MessageStatus.FAILED)
    normal.head = answered
    normal.save(update_fields=["head"])

    for flag, value in (("trashed", True), ("shielded", True), ("folder", Folder.objects.create(name="H", hidden=True))):
        other = make_conversation(title=f"excluded {flag}")
        make_turns(other, ("user", f"lantern in {flag}"))
        setattr(other, flag, value)
        other.save()
    clipboard = make_conversation(persona="clipboard", title="Clipboard notes")
    make_turns(clipboard, ("user", "lantern oil on the list"))

    hits = past_conversation_search(query="LANTERN", context=ToolContext(current.id, "elion"))
    assert sorted((h["conversation_title"], h["role"], h["excerpt"]) for h in hits) == [
        ("River night", "assistant", "The lantern is lit."),
        ("River night", "user", "Light the lantern?"),
    ]


def test_past_search_tool_groups_by_conversation_title(make_conversation, make_turns):
    current = make_conversation(title="Now")
    for title in ("First", "Second"):
        make_turns(make_conversation(title=title), ("user", f"heron {title}"), ("assistant", "x " * 400 + "heron"))
    result = run_tool(call("search_past_conversations", {"query": "heron"}), offered=ALL_TOOLS,
                      context=ToolContext(current.id, "elion"))
    body = json.loads(result.content)
    assert not result.is_error
    assert [c["title"] for c in body["conversations"]] == ["Second", "First"]
    assert all(len(e["excerpt"]) <= 300 for c in body["conversations"] for e in c["excerpts"])


@pytest.mark.parametrize(
    ("name", "arguments", "fragment"),
    [
        ("search_archive", "{not json", "not valid JSON"),
        ("search_archive", "[1, 2]", "JSON object"),
        ("search_archive", {"query": ""}, "query must be a non-empty string"),
        ("search_archive", {"query": "x", "collection": "diaries"}, "collection must be one of"),
        ("search_past_conversations", {"query": "x", "limit": "many"}, "limit must be an integer"),
        ("read_library_file", {"file_id": 999}, "No Library file has that id"),
        ("read_library_file", {}, "file_id must be an integer"),
    ],
)
def test_bad_arguments_become_error_results(make_conversation, name, arguments, fragment):
    conversation = make_conversation()
    result = run_tool(call(name, arguments), offered=ALL_TOOLS, context=ToolContext(conversation.id, "elion"))
    assert result.is_error and result.content.startswith("Tool error:") and fragment in result.content


def test_projection_pairs_every_call_and_marks_an_interrupted_one():
    parts = [
        {"type": "tool_call", "call_id": "a", "name": "list_library", "arguments": "{}", "round": 0},
        {"type": "tool_result", "call_id": "a", "content": '{"files": []}', "is_error": False},
        {"type": "tool_call", "call_id": "b", "name": "search_archive", "arguments": '{"query": "x"}', "round": 1},
        {"type": "tool_call", "call_id": "c", "name": "list_library", "arguments": "{}", "round": 1},
        {"type": "tool_result", "call_id": "c", "content": "late", "is_error": False},
    ]
    assert project_tool_parts(parts) == [
        {"role": "assistant", "content": "", "tool_calls": [{"call_id": "a", "name": "list_library", "arguments": "{}"}]},
        {"role": "tool", "call_id": "a", "content": '{"files": []}'},
        {"role": "assistant", "content": "", "tool_calls": [
            {"call_id": "b", "name": "search_archive", "arguments": '{"query": "x"}'},
            {"call_id": "c", "name": "list_library", "arguments": "{}"},
        ]},
        {"role": "tool", "call_id": "b", "content": f"Tool error: {INTERRUPTED_RESULT}"},
        {"role": "tool", "call_id": "c", "content": "late"},
    ]
    assert project_tool_parts([]) == []


def test_interrupted_reply_with_a_dangling_call_projects_well_paired(make_conversation, make_turns):
    from tests.support.factories import request_for

    conversation = make_conversation()
    _, reply = make_turns(conversation, ("user", "look it up"), ("assistant", "Let me look"))
    Message.objects.filter(pk=reply.pk).update(
        status=MessageStatus.INTERRUPTED,
        parts=[{"type": "tool_call", "call_id": "z", "name": "list_library", "arguments": "{}", "round": 0}],
    )
    make_turns(conversation, ("user", "and now?"))
    messages = request_for(conversation).messages
    calls = [m for m in messages if m.get("tool_calls")]
    results = [m for m in messages if m["role"] == "tool"]
    assert [c["call_id"] for m in calls for c in m["tool_calls"]] == ["z"]
    assert results == [{"role": "tool", "call_id": "z", "content": f"Tool error: {INTERRUPTED_RESULT}"}]
    assert [m["role"] for m in messages][-4:] == ["assistant", "tool", "assistant", "user"]
