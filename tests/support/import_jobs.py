"""Background import jobs in tests: the URLs, the counts an answer holds, running a queued job in process."""

from __future__ import annotations

import pytest
from django_q.models import OrmQ

from archive import tasks

IMPORT = "/api/archive/import/chatgpt/"


COUNTS = ("conversations", "messages", "alternate_messages", "skipped", "duplicates")


def job_url(job_id: str, action: str = "") -> str:
    return f"/api/archive/imports/{job_id}/" + (f"{action}/" if action else "")


@pytest.fixture
def run_queued(django_capture_on_commit_callbacks):
    """Run every task in the queue (and those they enqueue) as a worker would; the states they answered."""

    def run() -> list[str]:
        answers = []
        while (queued := OrmQ.objects.order_by("id").first()) is not None:
            task = queued.task
            queued.delete()
            assert task["func"] == tasks.__name__ + ".run_import_job"
            with django_capture_on_commit_callbacks(execute=True):
                answers.append(tasks.run_import_job(*task["args"]))
        return answers

    return run


def counts(body: dict) -> dict:
    return {name: body[name] for name in COUNTS}
