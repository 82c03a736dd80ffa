"""Handing work a request started to the django-q2 cluster, once its writes have committed.

Every request that queues a task (an import, Back up now, Verify again, a restore) calls
`task_queue_after_commit`: the task is queued after the commit, so it finds the row it runs.
The broker can refuse it then (Redis away, the ORM broker's database failing): the request's
rows are already written, so the caller's `refused` undoes what would otherwise wait forever for
a task nobody queued (a new import, backup or restore is removed with its files; an import that was
resuming is left failed, and resumes later), and the request answers 503 `queue_unavailable` with
`Retry-After`, never a 500.

The cluster's own chains (the next slice of an import, the reconciliation batches, a check-in's
run) queue the same way or directly; a refusal there fails the task that queued, as the cluster
logs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django_q.tasks import async_task

from elion.base.errors import Unavailable

logger = logging.getLogger(__name__)


class QueueUnavailable(Unavailable):
    code = "queue_unavailable"


def queue_refusal_detail(what: str) -> str:
    """The sentence the owner reads when the broker refused `what` ("The import", "The backup"…)."""
    return (f"{what} could not be handed to Elion's task queue (its broker did not answer). "
            "Nothing was lost; try again in a moment.")


def task_queue_after_commit(
    func: str, *args: object, task_name: str, what: str, refused: Callable[[str], None] | None = None,
    **options: object,
) -> None:
    """Queue `func(*args)` once the enclosing transaction commits (at once outside one).

    When the broker refuses: `refused(detail)` records it on the caller's row, then `QueueUnavailable`
    (503) rises with the same sentence."""

    def enqueue() -> None:
        try:
            async_task(func, *args, task_name=task_name, **options)
        except Exception as exc:  # any broker failure is the same refusal: the work was not queued
            detail = queue_refusal_detail(what)
            logger.error("the task queue refused %s (%s): %s", task_name, func, exc)
            if refused is not None:
                refused(detail)
            raise QueueUnavailable(detail) from exc

    transaction.on_commit(enqueue)
