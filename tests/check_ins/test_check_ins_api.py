"""The check-ins API (docs/api.md "Check-ins"): the contract's shapes, 400 with the error shape for an invalid
schedule, zone, target or brief, 404 for an unknown id, Run now with an Idempotency-Key (201, then 200), and no
5xx for any body (a fuzz-ish walk of malformed values)."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from check_ins.models import CheckIn, CheckInRun
from tests.support.factories import api_call, thread
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, MessageKind

pytestmark = pytest.mark.django_db(transaction=True)
BODY = {
    "title": "Interview", "brief": "ask how the interview went",
    "schedule": {"kind": "weekdays", "at": "09:00", "days": ["fri", "mon"]}, "time_zone": "Europe/Berlin",
    "target": {"kind": "new_chat"}, "quiet_hours": {"start": "22:00", "end": "07:00"},
}


def test_create_read_list_patch_delete_in_the_contracts_shape():
    client = Client()
    created = api_call(client, "POST", "/api/check-ins/", BODY, status=201)
    assert set(created) == {"id", "title", "brief", "schedule", "time_zone", "target", "quiet_hours", "enabled",
                            "paused_reason", "next_run_at", "last_run_at"}
    assert created["schedule"] == {"kind": "weekdays", "at": "09:00", "days": ["mon", "fri"]}
    assert created["target"] == {"kind": "new_chat"}
    assert created["quiet_hours"] == {"start": "22:00", "end": "07:00"}
    assert (created["enabled"], created["paused_reason"], created["last_run_at"]) == (True, "", None)
    assert created["next_run_at"].endswith("+00:00")
    path = f"/api/check-ins/{created['id']}/"
    assert api_call(client, "GET", path) == created
    assert api_call(client, "GET", "/api/check-ins/") == {"results": [created]}
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    patched = api_call(client, "PATCH", path, {
        "schedule": {"kind": "every_n_days", "at": "2030-01-02T08:15", "n": 3}, "quiet_hours": None,
        "target": {"kind": "conversation", "conversation_id": str(conversation.pk)}, "enabled": False,
    })
    assert patched["schedule"] == {"kind": "every_n_days", "at": "2030-01-02T08:15", "n": 3}
    assert patched["target"] == {"kind": "conversation", "conversation_id": str(conversation.pk)}
    assert (patched["quiet_hours"], patched["enabled"], patched["next_run_at"]) == (None, False, None)
    assert api_call(client, "DELETE", path, status=204) == {}
    assert api_call(client, "GET", path, status=404)["error"] == "check_in_not_found"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"schedule": {"kind": "daily", "at": "24:00"}}, "invalid_schedule"),
        ({"schedule": None}, "invalid_schedule"),
        ({"time_zone": "Europe/Atlantis"}, "invalid_time_zone"),
        ({"time_zone": 5}, "invalid_time_zone"),
        ({"target": {"kind": "conversation", "conversation_id": "00000000-0000-0000-0000-000000000000"}},
         "invalid_target"),
        ({"brief": ""}, "invalid_brief"),
        ({"brief": ["a"]}, "invalid_brief"),
        ({"title": None}, "invalid_title"),
    ],
)
def test_invalid_values_are_400_with_the_error_shape(change, code):
    body = api_call(Client(), "POST", "/api/check-ins/", {**BODY, **change}, status=400)
    assert body["error"] == code and body["detail"]
    assert not CheckIn.objects.exists()


@pytest.mark.parametrize("check_in_id", ["999", "abc", "-1", "99999999999999999999999", "1.5"])
def test_an_unknown_or_malformed_id_is_404(check_in_id):
    client = Client()
    for method in ("GET", "PATCH", "DELETE"):
        body = {} if method == "PATCH" else None
        assert api_call(client, method, f"/api/check-ins/{check_in_id}/", body, status=404)["error"] == "check_in_not_found"
    response = client.post(f"/api/check-ins/{check_in_id}/run/", HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 404


_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(["title", "brief", "schedule", "time_zone", "target", "quiet_hours", "enabled", "x"]),
       value=_VALUES, nested=st.sampled_from(["", "kind", "at", "days", "n", "conversation_id", "start"]))
def test_fuzzed_bodies_never_answer_5xx(field, value, nested):
    body = dict(BODY)
    if nested and isinstance(body.get(field), dict):
        body[field] = {**body[field], nested: value}
    else:
        body[field] = value
    response = Client().post("/api/check-ins/", json.dumps(body), content_type="application/json")
    assert response.status_code in (201, 400), (response.status_code, body, response.content[:300])
    if response.status_code == 400:
        assert set(response.json()) == {"error", "detail"}
    CheckIn.objects.all().delete()


def test_malformed_bodies_are_400():
    client = Client()
    for raw in ("[1, 2]", "not json", '"text"', "{\"title\": \"\\u0000\"}"):
        response = client.post("/api/check-ins/", raw, content_type="application/json")
        assert response.status_code == 400, (raw, response.content)


def test_run_now_with_an_idempotency_key_is_201_then_200_with_the_same_reply(scripted_provider):
    client = Client()
    created = api_call(client, "POST", "/api/check-ins/", BODY, status=201)
    path = f"/api/check-ins/{created['id']}/run/"
    assert client.post(path).status_code == 400  # no key
    scripted_provider.script(ScriptedReply(text="Hello from your check-in."))
    first = client.post(path, HTTP_IDEMPOTENCY_KEY="run-1")
    assert first.status_code == 201, first.content
    again = client.post(path, HTTP_IDEMPOTENCY_KEY="run-1")
    assert again.status_code == 200 and again.json() == first.json()
    assert len(scripted_provider.requests) == 1 and CheckInRun.objects.count() == 1
    conversation = Conversation.objects.get(pk=first.json()["conversation_id"])
    messages = api_call(client, "GET", f"/api/conversations/{conversation.pk}/messages/")["results"]
    assert [(m["role"], m["kind"]) for m in messages if m["role"] != "system"] == [
        ("user", MessageKind.CHECK_IN_TRIGGER), ("assistant", "ordinary"),
    ]
    assert messages[-1]["id"] == first.json()["message_id"]
    assert messages[-1]["content"] == "Hello from your check-in."
    # The list API shows the unread mark; reading it (the API, or opening the page) clears it.
    listed = {c["id"]: c for c in api_call(client, "GET", "/api/conversations/")["results"]}
    assert listed[str(conversation.pk)]["unread"] is True
    assert api_call(client, "PATCH", f"/api/conversations/{conversation.pk}/", {"unread": False})["unread"] is False
    assert api_call(client, "PATCH", f"/api/conversations/{conversation.pk}/", {"unread": True}, status=400)[
        "error"] == "invalid_unread"
    Conversation.objects.filter(pk=conversation.pk).update(unread=True)
    assert client.get(f"/c/{conversation.pk}/").status_code == 200
    conversation.refresh_from_db()
    assert not conversation.unread


def test_run_now_into_a_trashed_conversation_pauses_it_and_answers_409(scripted_provider):
    client = Client()
    conversation = thread(("user", "Hello."), ("assistant", "Hi."))
    created = api_call(client, "POST", "/api/check-ins/", {
        **BODY, "target": {"kind": "conversation", "conversation_id": str(conversation.pk)}}, status=201)
    Conversation.objects.filter(pk=conversation.pk).update(trashed=True)
    response = client.post(f"/api/check-ins/{created['id']}/run/", HTTP_IDEMPOTENCY_KEY="k")
    assert response.status_code == 409 and response.json()["error"] == "check_in_paused"
    shown = api_call(client, "GET", f"/api/check-ins/{created['id']}/")
    assert shown["enabled"] is False and "trash" in shown["paused_reason"]
    assert not scripted_provider.requests


def test_settings_carry_time_zone_and_check_in_proposals():
    client = Client()
    shown = api_call(client, "GET", "/api/settings/")
    assert (shown["time_zone"], shown["check_in_proposals"]) == ("UTC", True)
    saved = api_call(client, "PATCH", "/api/settings/", {"time_zone": "Europe/Berlin", "check_in_proposals": False})
    assert (saved["time_zone"], saved["check_in_proposals"]) == ("Europe/Berlin", False)
    assert api_call(client, "PATCH", "/api/settings/", {"time_zone": "Berlin"}, status=400)["error"] == "invalid_time_zone"
    assert api_call(client, "PATCH", "/api/settings/", {"check_in_proposals": "no"}, status=400)["error"] == (
        "invalid_check_in_proposals")
