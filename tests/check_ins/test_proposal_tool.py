"""`propose_check_in` through the real send pipeline, the real `openai` SDK and the scripted provider (held to
the SDK's request types), on both selectors (issue 44, item 3): a proposal schedules nothing until the owner
approves it; it is offered under `propose_memory`'s rules (never private, shielded, trashed or hidden; its own
Settings switch); approving creates an ordinary check-in through the check-ins service.

Assertions are on the rows and on the exact requests the scripted provider received.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from check_ins.models import CheckIn, CheckInProposal, ProposalStatus
from conversations.services.visibility.transitions import conversation_trash
from tests.support.factories import api_call
from tests.support.scripted_provider import ScriptedReply
from tests.support.tool_requests import (
    SELECTORS,
    new_chat,
    send,
    tool_names,
    tool_outputs,
    tool_refused_where_suggesting_is_not_allowed,
)
from transcript.models import Message, Role

pytestmark = pytest.mark.django_db(transaction=True)


def friday_at_nine() -> str:
    """A wall time a few days ahead in the owner's zone (never in the past, whatever day the test runs)."""
    day = datetime.now(ZoneInfo("Europe/Berlin")).date() + timedelta(days=3)
    return f"{day.isoformat()}T09:00"


def propose(call_id: str = "call_interview", **extra: object) -> dict:
    arguments = {
        "title": "The interview", "brief": "Ask how the interview went.",
        "schedule": {"kind": "once", "at": friday_at_nine()}, "target": "this_conversation",
        "reason": "AUMA has an interview on Friday morning.",
    }
    return {"name": "propose_check_in", "call_id": call_id, "arguments": {**arguments, **extra}}


def proposing_turn(scripted_provider, client: Client, conversation_id: str, *calls: dict) -> list[dict]:
    """One owner turn whose reply makes `calls` in one round, then speaks; the tool results, decoded."""
    scripted_provider.clear()
    scripted_provider.script(ScriptedReply(tool_calls=list(calls)), ScriptedReply(text="Shall I ask you then?"))
    send(client, conversation_id, "I have the interview on Friday morning.")
    return [
        json.loads(output) if output.startswith("{") else {"error": output}
        for output in tool_outputs(scripted_provider.requests[-1])[-len(calls):]
    ]


@pytest.mark.parametrize("selector", SELECTORS)
def test_a_proposal_schedules_nothing_until_approved_with_edits(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    from conversations.services.settings_writes import assistant_settings_update

    client = Client()
    assistant_settings_update(time_zone="Europe/Berlin")
    conversation_id = new_chat(client)

    (result,) = proposing_turn(scripted_provider, client, conversation_id, propose())

    offered, answered = scripted_provider.requests
    assert "propose_check_in" in tool_names(offered)
    proposal = CheckInProposal.objects.get()
    assert result["status"] == "proposed" and result["proposal_id"] == proposal.pk
    assert "Nothing is scheduled" in result["detail"] and "(Europe/Berlin)" in result["detail"]
    user_turn = Message.objects.get(conversation_id=conversation_id, role=Role.USER)
    reply = Message.objects.get(conversation_id=conversation_id, role=Role.ASSISTANT)
    assert (proposal.status, proposal.title, proposal.target_kind) == ("pending", "The interview", "conversation")
    assert proposal.schedule == {"kind": "once", "at": friday_at_nine()}
    assert (str(proposal.conversation_id), proposal.source_message_id, proposal.reply_message_id) == (
        conversation_id, user_turn.id, reply.id,
    )
    assert not CheckIn.objects.exists()

    listed = api_call(client, "get", "/api/check-in-proposals/")["results"]
    assert [p["id"] for p in listed] == [proposal.pk]
    assert listed[0]["target"] == {"kind": "conversation", "conversation_id": conversation_id}
    assert listed[0]["reply_id"] == str(reply.id) and listed[0]["check_in_id"] is None

    approved = api_call(
        client, "post", f"/api/check-in-proposals/{proposal.pk}/approve/",
        {"title": "Interview check-in", "schedule": {"kind": "daily", "at": "18:30"}}, status=201,
    )
    check_in = CheckIn.objects.get()
    assert approved["check_in"]["id"] == check_in.pk and approved["proposal"]["status"] == "approved"
    assert approved["proposal"]["check_in_id"] == check_in.pk
    assert (check_in.title, check_in.brief, check_in.schedule_kind, check_in.schedule_at) == (
        "Interview check-in", "Ask how the interview went.", "daily", "18:30",
    )
    assert (check_in.target_kind, str(check_in.conversation_id), check_in.time_zone) == (
        "conversation", conversation_id, "Europe/Berlin",
    )
    assert check_in.enabled and check_in.next_run_at is not None
    # Once decided, the proposal cannot be decided again; approved ones leave the default list.
    api_call(client, "post", f"/api/check-in-proposals/{proposal.pk}/approve/", {}, status=409)
    api_call(client, "post", f"/api/check-in-proposals/{proposal.pk}/dismiss/", status=409)
    assert api_call(client, "get", "/api/check-in-proposals/")["results"] == []
    assert [p["id"] for p in api_call(client, "get", "/api/check-in-proposals/?status=approved")["results"]] == [
        proposal.pk
    ]


@pytest.mark.parametrize("selector", SELECTORS)
def test_never_offered_in_private_shielded_or_quarantined_chats(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    client = Client()
    tool_refused_where_suggesting_is_not_allowed(scripted_provider, client, propose(), "The interview is on Friday.")
    assert not CheckInProposal.objects.exists()  # and nothing is recorded


@pytest.mark.parametrize("selector", SELECTORS)
def test_the_setting_off_takes_the_tool_away_and_the_service_refuses_too(scripted_provider, settings, selector):
    from check_ins.services.proposals import check_in_propose
    from conversations.services.settings_writes import assistant_settings_update

    settings.ELION_API_SELECTOR = selector
    client = Client()
    conversation_id = new_chat(client)
    assistant_settings_update(check_in_proposals=False)
    scripted_provider.clear()
    send(client, conversation_id, "Hello.")
    assert "propose_check_in" not in tool_names(scripted_provider.requests[0])
    assert "propose_memory" in tool_names(scripted_provider.requests[0])  # its own switch, not memories'

    # A call made while it was still offered (the switch turned off meanwhile) is refused when it runs.
    arguments = propose()["arguments"]
    outcome = check_in_propose(conversation_id=conversation_id, reply_id=None, tool_call_id="c", **arguments)
    assert (outcome.status, outcome.code) == ("refused", "proposals_off")
    assistant_settings_update(check_in_proposals=True, memory_suggestions=False)
    scripted_provider.clear()
    send(client, conversation_id, "Hello again.")
    assert "propose_check_in" in tool_names(scripted_provider.requests[0])
    assert "propose_memory" not in tool_names(scripted_provider.requests[0])


def test_bad_arguments_duplicates_the_past_and_the_pending_cap_are_told_to_the_model(scripted_provider):
    client = Client()
    conversation_id = new_chat(client)
    results = proposing_turn(
        scripted_provider, client, conversation_id,
        propose(call_id="c1"),
        propose(call_id="c2", title="  the INTERVIEW ", brief="ask how the   interview went."),
        propose(call_id="c3", schedule={"kind": "once", "at": "2001-01-01T09:00"}),
        propose(call_id="c4", schedule={"kind": "weekly", "at": "09:00"}),
        propose(call_id="c5", target="somewhere"),
        propose(call_id="c6", title="Garden", schedule={"kind": "weekdays", "at": "08:00", "days": ["sat"]}),
        propose(call_id="c7", title="Run", schedule={"kind": "every_n_days", "at": friday_at_nine(), "n": 3}),
        propose(call_id="c8", title="One too many"),
        propose(call_id="c9", title=""),
    )
    codes = [r.get("code") or r.get("error") for r in results]
    assert codes[0] == "proposed" and codes[1] == "duplicate_pending"
    assert codes[2] == "in_the_past" and "it is now" in results[2]["detail"]
    assert codes[3].startswith("Tool error: schedule.kind must be one of")
    assert codes[4].startswith("Tool error: target must be one of")
    assert codes[5:7] == ["proposed", "proposed"]
    assert codes[7] == "pending_limit" and "enough" in results[7]["detail"]
    assert codes[8] == "Tool error: title cannot be empty."
    assert CheckInProposal.objects.filter(status=ProposalStatus.PENDING).count() == 3

    # A dismissed suggestion is refused from then on, from any conversation.
    first = CheckInProposal.objects.get(tool_call_id="c1")
    api_call(client, "post", f"/api/check-in-proposals/{first.pk}/dismiss/")
    api_call(client, "post", f"/api/check-in-proposals/{first.pk}/dismiss/")  # twice: a no-op
    other = new_chat(client)
    (again,) = proposing_turn(scripted_provider, client, other, propose(call_id="c10"))
    assert again["code"] == "duplicate_dismissed"
    assert not CheckIn.objects.exists()


def test_approve_checks_the_target_again_and_bad_edits_are_a_400_in_the_error_shape(scripted_provider):
    client = Client()
    conversation_id = new_chat(client)
    proposing_turn(scripted_provider, client, conversation_id, propose())
    proposal = CheckInProposal.objects.get()
    url = f"/api/check-in-proposals/{proposal.pk}/approve/"
    for body, code in [
        ({"colour": "red"}, "unknown_check_in_field"),
        ({"schedule": {"kind": "daily", "at": "25:00"}}, "invalid_schedule"),
        ({"time_zone": "Mars/Olympus"}, "invalid_time_zone"),
        ({"target": {"kind": "conversation", "conversation_id": "not-an-id"}}, "invalid_target"),
        ({"brief": ""}, "invalid_brief"),
        ({"quiet_hours": {"start": "22:00"}}, "invalid_quiet_hours"),
    ]:
        answer = api_call(client, "post", url, body, status=400)
        assert answer["error"] == code and answer["detail"], (body, answer)
    assert api_call(client, "post", url, ["not", "an", "object"], status=400)["error"] == "malformed_request"
    assert api_call(client, "post", "/api/check-in-proposals/999999/approve/", {}, status=404)["error"] == (
        "check_in_proposal_not_found"
    )
    assert api_call(client, "post", "/api/check-in-proposals/abc/dismiss/", status=404)["error"] == (
        "check_in_proposal_not_found"
    )
    assert api_call(client, "get", "/api/check-in-proposals/?status=maybe", status=400)["error"] == "invalid_status"

    # The chat was trashed after the proposal: approving it as proposed is refused, a new chat each time is not.
    conversation_trash(conversation_id=conversation_id)
    refused = api_call(client, "post", url, {}, status=400)
    assert refused["error"] == "invalid_target" and "trash" in refused["detail"]
    assert not CheckIn.objects.exists()
    api_call(client, "post", url, {"target": {"kind": "new_chat"}}, status=201)
    assert CheckIn.objects.get().target_kind == "new_chat"
