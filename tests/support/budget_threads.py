"""A thread driven past a small input budget through the real send path (`?stream=false`), for the trim
step's and `in_view`'s tests: each owner message and scripted reply about 300 tokens."""

from __future__ import annotations

from django.test import Client

from tests.support.scripted_provider import ScriptedReply

TURN_CHARACTERS = 1_200  # about 300 tokens at the app's four characters a token


def turn_text(label: str, n: int) -> str:
    head = f"{label} {n:03d}: "
    return head + ("lorem ipsum dolor sit amet " * 60)[: TURN_CHARACTERS - len(head)]


def send_json(conversation_id: str, content: str) -> dict:
    response = Client().post(
        f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()


def sends_until_trimmed(scripted_provider, conversation_id: str, *, start: int = 0, limit: int = 40) -> list[dict]:
    """Send turns until a request is trimmed (its diagnostics say so); every send's JSON, in order."""
    sent = []
    for n in range(start, start + limit):
        scripted_provider.script(ScriptedReply(text=turn_text("Reply", n)))
        sent.append(send_json(conversation_id, turn_text("Message", n)))
        if sent[-1]["diagnostics"]["trimmed_messages"]:
            return sent
    raise AssertionError(f"no send was trimmed in {limit} sends")
