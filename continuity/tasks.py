"""django-q2 task entry points for legacy-prompt reconciliation: thin wrappers over services.

`prompts_reconcile_tick` is scheduled every minute (it also finishes any refresh of marked-stale prompts an
operation left behind) (migration
`0003_schedule_prompt_reconciliation`). When no completion is recorded for
the current policy version and a candidate is ready, it claims the dispatch
lease and enqueues one batch; each batch enqueues the next while ready
candidates remain. Nothing here runs when the web server starts.
"""

from __future__ import annotations

import time
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from continuity.rules import prompt_refresh
from continuity.rules.policies import policy_markers
from continuity.services import reconciliation
from memories.services import memory_writes

TICK_TASK = "continuity.tasks.prompts_reconcile_tick"
BATCH_TASK = "continuity.tasks.reconcile_prompt_batch"


def enqueue(func: str, *args: object) -> None:
    # After commit: the batch must see what enqueued it.
    transaction.on_commit(lambda: async_task(func, *args, task_name="reconcile stored prompts"))


def prompts_reconcile_tick() -> bool:
    """Scheduled: refresh the prompts an operation marked stale and could not rebuild before it returned (its
    process died between its commit and its batches: `continuity.rules.prompt_refresh`); then start a chain
    of legacy-prompt batches if there is work and no other cluster runs one. First, a memory deletion whose
    process died after its first transaction is finished (its snapshot rows and its row:
    `memory_writes.memory_deletions_finish`)."""
    memory_writes.memory_deletions_finish()
    if prompt_refresh.stale_prompts_waiting():
        _refresh_slice_run()
    markers = policy_markers()
    now = timezone.now()
    if reconciliation.completion_recorded(reconciliation.policy_version(markers)):
        return False  # later starts skip the scan
    if not reconciliation.ready_candidates(markers, now).exists():
        # Nothing to do now: everything done (record it) or backing off.
        reconciliation.completion_record_if_done(markers, now)
        return False
    if not reconciliation.dispatch_claim(markers, now):
        return False
    enqueue(BATCH_TASK)
    return True


def stale_prompts_refresh_slice() -> int:
    """Queued by an operation whose refresh scope is large (`prompt_refresh.stale_prompts_settle`, which waits
    for the marks to clear): rebuild marked prompts for at most `ELION_PROMPT_REFRESH_SLICE_SECONDS`, then queue
    the next slice while any is still marked. Returns how many this slice rewrote. A slice that finds another
    runner holding the lease (an earlier operation's chain, the tick) ends at once and queues none: the holder
    queues the next slice when it ends with prompts still marked."""
    return _refresh_slice_run()


def _refresh_slice_run() -> int:
    """One slice of refresh batches as the queue's runner (for at most `ELION_PROMPT_REFRESH_SLICE_SECONDS`: a
    task's limit is the cluster's), then the next slice queued while any prompt is still marked (behind the
    slice's cursor, or past its time). 0 at once while another runner holds the lease."""
    until = time.monotonic() + settings.ELION_PROMPT_REFRESH_SLICE_SECONDS
    rewritten = prompt_refresh.stale_prompts_refresh_leased(until=until)
    if rewritten is None:
        return 0  # another runner holds the lease (a chain, the tick): it queues what it leaves
    if prompt_refresh.stale_prompts_waiting():
        async_task(prompt_refresh.REFRESH_TASK, task_name=prompt_refresh.REFRESH_TASK_NAME)
    return rewritten


def reconcile_prompt_batch(batch_size: int | None = None, after: str | None = None) -> dict:
    """One bounded batch, from the conversation after `after` (the previous batch's end, as text); enqueues
    the next one while ready candidates remain."""
    result = reconciliation.prompts_reconcile_batch(batch_size=batch_size, after=UUID(after) if after else None)
    markers = policy_markers()
    if result.more and (result.rebuilt or result.failed):
        reconciliation.dispatch_renew(markers, timezone.now())
        enqueue(BATCH_TASK, batch_size, str(result.after) if result.after else None)
    else:
        reconciliation.dispatch_release(markers)
    return {"rebuilt": len(result.rebuilt), "failed": len(result.failed), "completed": result.completed}
