"""Trimming made visible (`in_view`), and the trim step end to end: real sends, the real SDK over HTTP to the
scripted provider and its simulated prefix cache.

The conversation answers `in_view: {"first_message_id", "out_of_view"}`: where the last send's request
began. Each send stores it in its own conversation update; reading it costs no statement of its own.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.support.budget_threads import send_json, sends_until_trimmed, turn_text
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def new_conversation() -> str:
    response = Client().post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def detail(conversation_id: str) -> dict:
    response = Client().get(f"/api/conversations/{conversation_id}/")
    assert response.status_code == 200
    return response.json()


def branch_ids(conversation_id: str) -> list[str]:
    response = Client().get(f"/api/conversations/{conversation_id}/messages/?limit=200")
    return [m["id"] for m in response.json()["results"]]


def first_turn_sent(request) -> str:
    """The content of the first user or assistant item of a recorded Responses request."""
    return next(item["content"] for item in request.body["input"] if item.get("role") in ("user", "assistant"))


def send_more(scripted_provider, conversation_id: str, n: int) -> dict:
    scripted_provider.script(ScriptedReply(text=turn_text("Reply", n)))
    return send_json(conversation_id, turn_text("Message", n))


def test_in_view_names_the_first_message_the_trimmed_request_carried(scripted_provider, settings):
    settings.ELION_INPUT_BUDGET_TOKENS = 4_000
    settings.ELION_TRIM_STEP = Decimal("0.1")
    conversation_id = new_conversation()
    assert detail(conversation_id)["in_view"] == {"first_message_id": None, "out_of_view": 0}
    sent = sends_until_trimmed(scripted_provider, conversation_id)
    assert all(s["diagnostics"]["trimmed_messages"] == 0 for s in sent[:-1])
    # Before the trim every send said so too: nothing out of view.
    in_view = detail(conversation_id)["in_view"]
    ids = branch_ids(conversation_id)
    assert in_view["first_message_id"] in ids
    assert in_view["out_of_view"] == ids.index(in_view["first_message_id"]) > 0
    first = Message.objects.get(pk=in_view["first_message_id"])
    assert first.role == "user"
    assert first_turn_sent(scripted_provider.last_request()) == first.content
    assert in_view["out_of_view"] == sent[-1]["diagnostics"]["trimmed_messages"]  # no failed turns above


def test_in_view_is_updated_by_each_send(scripted_provider, settings):
    """A send that needs no trim (here: the budget raised again) says that nothing is out of view."""
    settings.ELION_INPUT_BUDGET_TOKENS = 4_000
    conversation_id = new_conversation()
    sent = sends_until_trimmed(scripted_provider, conversation_id)
    assert detail(conversation_id)["in_view"]["out_of_view"] > 0
    settings.ELION_INPUT_BUDGET_TOKENS = 200_000
    send_more(scripted_provider, conversation_id, len(sent))
    assert detail(conversation_id)["in_view"] == {"first_message_id": None, "out_of_view": 0}


@pytest.mark.parametrize("step", [Decimal(0), Decimal("0.25")])
def test_trim_step_sends_past_the_budget_keep_a_cached_prefix(scripted_provider, settings, step):
    """Step 0 starts each trimmed request one exchange later, so only the stored prompt is cached; a step
    of 25% (1,500 tokens: two exchanges) keeps the same start for the next send, whose prefix the
    provider's cache then serves."""
    settings.ELION_INPUT_BUDGET_TOKENS = 6_000
    settings.ELION_TRIM_STEP = step
    conversation_id = new_conversation()
    sent = sends_until_trimmed(scripted_provider, conversation_id)
    trimmed_at = detail(conversation_id)["in_view"]
    first_request = scripted_provider.last_request()
    reply = send_more(scripted_provider, conversation_id, len(sent))["assistant_message"]
    after = detail(conversation_id)["in_view"]
    second_request = scripted_provider.last_request()
    usage = reply["metadata"]["usage"]
    if step:
        assert after == trimmed_at
        prefix = first_request.body["input"][:-1] if first_request.body["input"][-1]["role"] == "system" else \
            first_request.body["input"]
        assert second_request.body["input"][: len(prefix)] == prefix
        assert usage["cached_input_tokens"] >= 0.8 * usage["input_tokens"]
    else:
        assert after["out_of_view"] > trimmed_at["out_of_view"]
        assert first_turn_sent(second_request) != first_turn_sent(first_request)
        assert usage["cached_input_tokens"] < 0.5 * usage["input_tokens"]


def test_in_view_costs_no_statement_of_its_own(scripted_provider, settings):
    """Stored by the send's one conversation update, read with the conversation's row."""
    settings.ELION_INPUT_BUDGET_TOKENS = 4_000
    trimmed = new_conversation()
    send_more(scripted_provider, trimmed, 0)
    with CaptureQueriesContext(connection) as plain:
        assert detail(trimmed)["in_view"]["out_of_view"] == 0
    sent = sends_until_trimmed(scripted_provider, trimmed, start=1)
    with CaptureQueriesContext(connection) as with_trim:
        assert detail(trimmed)["in_view"]["out_of_view"] > 0
    assert len(with_trim) == len(plain)
    with CaptureQueriesContext(connection) as send:
        send_more(scripted_provider, trimmed, len(sent) + 1)
    writes = [q["sql"] for q in send.captured_queries if q["sql"].startswith("UPDATE") and "in_view" in q["sql"]]
    assert len(writes) == 1 and '"head_id"' in writes[0]
