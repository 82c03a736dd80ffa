"""The birth period of a chat a check-in opens (issue 44; seed: automatic recall never runs before Elion's first
ordinary assistant response in a new thread).

The rule, as decided (docs/check_ins.md "Birth period"): a check-in that opens a new chat is that chat's opener.
Its reply is made in the birth period — the final-eight handoff is there, automatic recall is not, however the
brief asks to remember — and, once stored complete, it is Elion's first ordinary assistant response: it ends
the birth period (`ends_birth_period`, the one rule), so the owner's first message in the chat gets recall as
in any born thread. A failed check-in reply ends nothing.
"""

from __future__ import annotations

import pytest
from django.test import Client

from check_ins.models import RunStatus
from continuity.rules.prompt_policy import RESERVED_RECALL_HEADING
from tests.check_ins.support import check_in_due, only_run, run_due
from tests.support.factories import thread
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation

pytestmark = pytest.mark.django_db(transaction=True)
RECALL_CUE_BRIEF = "Remember the lighthouse? Find what Marisol painted and ask how the door looks now."


def _systems(request) -> list[str]:
    return [str(item["content"]) for item in request.body["input"] if item["role"] == "system"]


def _send(conversation_id, content: str) -> dict:
    response = Client().post(f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content},
                             content_type="application/json")
    assert response.status_code == 200, response.content
    return response.json()


def test_birth_period_a_check_in_opening_a_new_chat_gets_its_handoff_and_no_recall_and_its_reply_ends_it(
    scripted_provider,
):
    thread(("user", "The lighthouse keeper Marisol painted the door blue."), ("assistant", "Blue!"),
           title="Lighthouse talk")
    thread(("user", "Our walk along the pier."), ("assistant", "The pier at dusk."), title="Pier")  # the handoff
    check_in = check_in_due(brief=RECALL_CUE_BRIEF)
    scripted_provider.script(ScriptedReply(text="Good morning! How does the door look now?"))

    run_due()

    run = only_run(check_in)
    assert run.status == RunStatus.DONE
    [request] = scripted_provider.requests
    systems = _systems(request)
    assert len(systems) == 1, "no dynamic context: automatic recall does not run in the birth period"
    assert "The pier at dusk." in systems[0], "the New Chat handoff is there"
    assert RESERVED_RECALL_HEADING not in str(request.body)

    # The check-in's reply was Elion's first ordinary response: the owner's first message gets recall.
    _send(run.conversation_id, "Remember the lighthouse? Find what Marisol painted.")
    systems = _systems(scripted_provider.last_request())
    assert len(systems) == 2 and RESERVED_RECALL_HEADING in systems[1]
    assert "Marisol painted the door blue" in systems[1]


def test_birth_period_a_failed_check_in_reply_does_not_end_it(scripted_provider):
    thread(("user", "The lighthouse keeper Marisol painted the door blue."), ("assistant", "Blue!"),
           title="Lighthouse talk")
    check_in = check_in_due(brief=RECALL_CUE_BRIEF)
    scripted_provider.script(ScriptedReply(status=500, error_message="down"))
    run_due()
    run = only_run(check_in)
    assert run.status == RunStatus.FAILED
    assert Conversation.objects.filter(pk=run.conversation_id).exists()
    _send(run.conversation_id, "Remember the lighthouse? Find what Marisol painted.")
    assert len(_systems(scripted_provider.last_request())) == 1, "still in the birth period: no recall"
