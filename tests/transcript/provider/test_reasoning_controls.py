"""Reasoning controls (issue "GPT-5.5 the way the Responses API means it"): Settings → reasoning effort,
verbosity and reasoning summaries, sent as `reasoning: {effort, summary}` and `text: {verbosity}` on the
Responses selector and never on Chat Completions. Real `openai` SDK against the scripted provider.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from conversations.services.settings_writes import assistant_settings_update
from tests.support.factories import sent_and_answered as send
from tests.support.factories import thread
from tests.support.scripted_provider import ScriptedReply

pytestmark = pytest.mark.django_db(transaction=True)


def test_reasoning_controls_default_to_medium_effort_medium_verbosity_and_summaries(scripted_provider):
    settings = Client().get("/api/settings/").json()
    assert (settings["reasoning_effort"], settings["verbosity"], settings["reasoning_summary_shown"]) == (
        "medium", "medium", True,
    )
    scripted_provider.script(ScriptedReply(text="Hello."))
    send(thread(), "Hi")
    body = scripted_provider.last_request().body
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["text"] == {"verbosity": "medium"}


def test_reasoning_controls_are_sent_as_the_owner_set_them(scripted_provider):
    response = Client().patch(
        "/api/settings/", {"reasoning_effort": "high", "verbosity": "low", "reasoning_summary_shown": False},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    scripted_provider.script(ScriptedReply(text="Short."))
    send(thread(), "Hi")
    body = scripted_provider.last_request().body
    assert body["reasoning"] == {"effort": "high"}  # no summary asked for when none is shown
    assert body["text"] == {"verbosity": "low"}


@pytest.mark.parametrize(("field", "value"), [("reasoning_effort", "extreme"), ("verbosity", "none"), ("verbosity", 3)])
def test_reasoning_controls_refuse_values_outside_their_choices(field, value):
    response = Client().patch("/api/settings/", {field: value}, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == f"invalid_{field}"
    assert Client().get("/api/settings/").json()[field] == "medium"


def test_reasoning_controls_are_not_sent_to_chat_completions(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"
    scripted_provider.script(ScriptedReply(text="Plain."))
    send(thread(binding=None), "Hello")
    body = scripted_provider.last_request().body
    assert not {"reasoning", "text", "reasoning_effort", "verbosity"} & set(body)


def test_reasoning_controls_are_saved_from_the_settings_page():
    client = Client()
    page = client.get("/settings/")
    assert b'name="reasoning_effort"' in page.content and b'name="verbosity"' in page.content
    response = client.post("/settings/", {
        "owner_name": "AUMA", "display_name": "Elion Voicefire", "personality": "natural",
        "custom_instructions": "", "reasoning_effort": "low", "verbosity": "high",
    })
    assert response.status_code == 302
    saved = client.get("/api/settings/").json()
    assert (saved["reasoning_effort"], saved["verbosity"], saved["reasoning_summary_shown"]) == ("low", "high", False)


def test_saving_reasoning_controls_alone_rebuilds_no_stored_prompt():
    thread(("user", "hello"), ("assistant", "hi"))
    assistant_settings_update(reasoning_effort="low")  # the row exists
    with CaptureQueriesContext(connection) as queries:
        assistant_settings_update(reasoning_effort="high", verbosity="low", reasoning_summary_shown=False)
    assert not [q for q in queries.captured_queries if "conversations_message" in q["sql"]]
