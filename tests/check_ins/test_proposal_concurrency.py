"""Two tabs decide one check-in proposal at once (issue 44, item 3), with real transactions in real threads:
two approvals and a dismissal race. Whatever the order, exactly one of them wins, at most one check-in is
created, the proposal names it exactly when it was approved, and the losers hear 409
`check_in_proposal_not_pending` (a dismissal after a dismissal is a quiet no-op). On PostgreSQL this exercises
the proposal's row lock; on SQLite the IMMEDIATE write lock."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings as django_settings

from check_ins.models import CheckIn, CheckInProposal, ProposalStatus
from check_ins.services.proposals import check_in_proposal_approve, check_in_proposal_dismiss, check_in_propose
from conversations.services.threads.thread_writes import conversation_create
from elion.base.errors import Conflict
from tests.support.factories import turns_append
from tests.support.racing import run_together
from transcript.models import Role

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 30 if django_settings.DATABASE_IS_POSTGRES else 12


def test_racing_approvals_and_a_dismissal_decide_a_proposal_once():
    rng = random.Random(20261203)
    later = (datetime.now(ZoneInfo("UTC")).date() + timedelta(days=5)).isoformat()
    for round_number in range(ROUNDS):
        chat = conversation_create(title=f"Round {round_number}")
        _, reply = turns_append(chat, (Role.USER, "Friday is the interview."), (Role.ASSISTANT, "Good luck."))
        proposal = check_in_propose(
            conversation_id=chat.pk, reply_id=reply.pk, tool_call_id="c", title=f"Interview {round_number}",
            brief="Ask how it went.", schedule={"kind": "once", "at": f"{later}T09:00"},
        ).proposal
        before = CheckIn.objects.count()
        operations = [
            lambda pk=proposal.pk: check_in_proposal_approve(proposal_id=pk),
            lambda pk=proposal.pk: check_in_proposal_approve(proposal_id=pk, changes={"title": "Edited"}),
            lambda pk=proposal.pk: check_in_proposal_dismiss(proposal_id=pk),
        ]
        rng.shuffle(operations)

        errors = run_together(operations, jitter=0.006)

        assert all(isinstance(exc, Conflict) and exc.code == "check_in_proposal_not_pending" for exc in errors), errors
        proposal.refresh_from_db()
        created = CheckIn.objects.count() - before
        if proposal.status == ProposalStatus.APPROVED:
            assert created == 1 and proposal.check_in_id is not None and len(errors) == 2
        else:
            assert proposal.status == ProposalStatus.DISMISSED
            assert created == 0 and proposal.check_in_id is None and len(errors) == 2
    assert CheckInProposal.objects.filter(status=ProposalStatus.PENDING).count() == 0
