"""Check-in test helpers: a check-in due now, and its run claimed and executed in this process."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from check_ins.models import CheckIn, CheckInRun
from check_ins.sending.turn import RunOutcome, check_in_run_execute
from check_ins.services.check_ins import check_in_create
from check_ins.services.runs import due_runs_claim

BRIEF = "ask how the lighthouse interview went"


def check_in_due(*, target: dict | None = None, brief: str = BRIEF, title: str = "Interview", late: timedelta = timedelta(minutes=1),
                 **fields) -> CheckIn:
    """A daily check-in whose next due time is `late` ago (the injected clock: its `next_run_at`).

    Its daily time is twelve hours from now, so its own schedule is never due while a test runs: a fixed
    09:00 made a second run whenever the suite passed 09:00 UTC between the injection and the claim."""
    far_from_now = (timezone.now() + timedelta(hours=12)).strftime("%H:%M")
    check_in = check_in_create(
        title=title, brief=brief, schedule={"kind": "daily", "at": far_from_now}, time_zone="UTC",
        target=target or {"kind": "new_chat"}, **fields,
    )
    due = (timezone.now() - late).replace(microsecond=0)
    CheckIn.objects.filter(pk=check_in.pk).update(next_run_at=due)
    check_in.refresh_from_db()
    return check_in


def run_due() -> list[RunOutcome]:
    """The minute's task in this process: claim what is due, execute each claimed run."""
    return [check_in_run_execute(run_id) for run_id in due_runs_claim()]


def only_run(check_in: CheckIn) -> CheckInRun:
    runs = list(CheckInRun.objects.filter(check_in=check_in))
    assert len(runs) == 1, runs
    return runs[0]
