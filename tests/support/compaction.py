"""A thread to compact and the two calls the compaction tests make (tests/continuity/test_compaction*.py);
the `long_thread` fixture reaches them through tests/continuity/conftest.py."""

from __future__ import annotations

import pytest
from django.test import Client

from transcript.models import Message

SUMMARY = "Summary: AUMA and Elion talked about the keeper Quillibrant, the blue door and Vexnorath."
TOOL_PARTS = [
    {"type": "tool_call", "call_id": "c1", "name": "list_library", "arguments": "{}", "round": 0},
    {"type": "tool_result", "call_id": "c1", "content": "{\"files\": []}", "is_error": False},
]


@pytest.fixture
def long_thread(make_conversation, make_turns, scripted_provider):
    conversation = make_conversation(title="Long one")
    turns = make_turns(
        conversation,
        ("user", "first question about the lighthouse"), ("assistant", "first answer"),
        ("user", "second question"), ("assistant", "second answer, after a tool"),
        ("user", "third question"), ("assistant", "third answer"),
    )
    Message.objects.filter(pk=turns[3].pk).update(parts=TOOL_PARTS)
    conversation.refresh_from_db()
    return conversation, turns


def compact(conversation, provider, summary=SUMMARY):
    provider.script({"text": summary})
    response = Client().post(f"/api/conversations/{conversation.id}/compaction/")
    assert response.status_code == 201, response.content
    return response.json()["compaction"]


def send(conversation, provider, content, reply="ok"):
    provider.script({"text": reply})
    response = Client().post(
        f"/api/conversations/{conversation.id}/messages/?stream=false", {"content": content},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return provider.last_request().body["input"]
