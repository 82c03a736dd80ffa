"""Settings → Check-ins' read (issue 44, item 5): every check-in with its latest run, in three statements
whatever the number of check-ins (the check-ins with their target chats, the latest runs, the pending
proposals)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import OuterRef, Subquery

from check_ins.models import CheckIn, CheckInProposal, CheckInRun, ProposalStatus


@dataclass(frozen=True)
class CheckInListing:
    check_ins: list[CheckIn]
    # check-in id -> its latest run (by due time)
    last_runs: dict[int, CheckInRun]
    pending_proposals: list[CheckInProposal]


def check_ins_listing() -> CheckInListing:
    latest = CheckInRun.objects.filter(check_in=OuterRef("pk")).order_by("-due_at", "-created_at").values("pk")[:1]
    rows = list(
        CheckIn.objects.select_related("conversation").annotate(last_run_id=Subquery(latest)).order_by("title", "id")
    )
    run_ids = [row.last_run_id for row in rows if row.last_run_id is not None]
    runs = {run.check_in_id: run for run in CheckInRun.objects.filter(pk__in=run_ids)} if run_ids else {}
    pending = list(
        CheckInProposal.objects.filter(status=ProposalStatus.PENDING).select_related("conversation", "check_in")
    )
    return CheckInListing(check_ins=rows, last_runs=runs, pending_proposals=pending)
