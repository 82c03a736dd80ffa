"""django-q2 task entry points for check-ins (issue 44): thin wrappers over `check_ins.services.runs` and
`check_ins.sending.turn` (a task may call the send path; services may not)."""

from __future__ import annotations

import logging
from uuid import UUID

from django_q.tasks import async_task

from check_ins.sending.turn import check_in_run_execute
from check_ins.services.runs import due_runs_claim, free_runs

logger = logging.getLogger(__name__)

RUN_TASK = "check_ins.tasks.check_in_run"


def check_ins_run_due() -> dict[str, int]:
    """Scheduled every minute (migration check_ins 0002): claim every due time that has come, and hand each
    claimed run, and each run whose worker died, to a worker of its own (`check_in_run`)."""
    claimed = due_runs_claim()
    again = [run_id for run_id in free_runs() if run_id not in set(claimed)]
    for run_id in (*claimed, *again):
        async_task(RUN_TASK, str(run_id), task_name=f"check-in run {run_id}")
    return {"claimed": len(claimed), "taken_again": len(again)}


def check_in_run(run_id: str) -> str:
    """One run: its trigger and reply (`check_ins.sending.turn.check_in_run_execute`); how it ended."""
    outcome = check_in_run_execute(UUID(run_id))
    logger.info("check-in run %s: %s %s", run_id, outcome.status, outcome.reason)
    return outcome.status
