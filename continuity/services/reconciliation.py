"""Legacy stored-prompt reconciliation (seed: "Older stored system prompts may predate this change").

A stored static prompt whose policy markers are not the current ones was
built under an older prompt, recall or handoff-size policy. Such dormant
prompts are rebuilt here, in bounded batches run by django-q2 jobs (or the
`reconcile_prompts` command in the foreground), never in the server's
start-up path. A prompt met by a normal send is rebuilt before use by
`static_prompt_ensure` regardless.

- A batch's candidates are rebuilt here, by a plain call of
  `static_prompts_rebuild` (reconciling is continuity's own job, not a change
  of a prompt's source in another app, so no domain event carries it), from
  the allowed static-prompt components: its memory-snapshot membership is
  read, never changed, and its verbatim handoff is re-rendered under the
  current limits with the prompt's boundary id kept.
- A candidate whose rebuild raises is recorded in
  `PromptReconciliationFailure` and retried with exponential backoff up to
  `ELION_RECONCILE_MAX_ATTEMPTS`; it stays stale and counted meanwhile.
- Completion is a `PromptReconciliationRun` row per policy version whose
  `completed_at` is set only when no stale prompt (so no failure) remains;
  later runs see it and skip the scan.
- Two reconcilers (two clusters, or a job beside the command) never rebuild
  the same prompt twice: a batch claims conversation rows with
  `SELECT ... FOR UPDATE SKIP LOCKED` and re-checks staleness after the lock.
  On SQLite the IMMEDIATE transaction serialises writers anyway.

Lock order: only conversation rows are locked (never `global_write_lock`),
exactly like a first send, so a concurrent memory edit/delete either commits
before our read or rebuilds the prompt again after we commit.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import F, Func, Q, QuerySet, TextField, Value
from django.db.models.functions import Coalesce
from django.db.models.sql.compiler import SQLCompiler
from django.utils import timezone

from continuity.models import PromptReconciliationFailure, PromptReconciliationRun
from continuity.rules.policies import policy_markers
from continuity.rules.prompt_store import static_prompts_rebuild
from transcript.models import Conversation, Message, Role

logger = logging.getLogger(__name__)

# The longest wait between two attempts at one failing candidate.
MAX_RETRY_DELAY = timedelta(hours=6)
# How long one cluster may keep enqueueing batches before another may take over.
DISPATCH_LEASE = timedelta(minutes=5)
# A batch looks for its candidates among this many times its size.
CLAIM_WINDOW = 4


# --- Selectors -------------------------------------------------------------


def policy_version(markers: dict[str, str] | None = None) -> str:
    """A stable name for a set of policy markers (the completion row's key)."""
    markers = markers if markers is not None else policy_markers()
    return hashlib.sha256(json.dumps(markers, sort_keys=True).encode()).hexdigest()


class MarkerText(Func):
    """`metadata -> policy_markers -> <name>` as text, NULL when missing: one JSON read per row.

    Django's own key transforms compile to a CASE over two JSON calls per key
    on SQLite; the health endpoint counts every stored prompt with this, so
    it is kept to the plain extraction.
    """

    output_field = TextField()

    def __init__(self, name: str) -> None:
        if not name.replace("_", "").isalnum():
            raise ValueError(f"not a marker name: {name!r}")
        self.marker = name
        super().__init__(F("metadata"))

    def as_sql(self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: object) -> tuple[str, list]:
        column, params = compiler.compile(self.source_expressions[0])
        if connection.vendor == "postgresql":
            return f"({column} #>> %s::text[])", [*params, f"{{policy_markers,{self.marker}}}"]
        return f"json_extract({column}, %s)", [*params, f'$."policy_markers"."{self.marker}"']


def stale_prompts(markers: dict[str, str] | None = None) -> QuerySet[Message]:
    """Stored prompts whose markers differ from `markers` (a missing marker counts as different)."""
    markers = markers if markers is not None else policy_markers()
    stale = Q()
    for name, value in markers.items():
        stale |= ~Q(**{f"marker_{name}": value})
    return (
        Message.objects.filter(role=Role.SYSTEM)
        .order_by()
        .alias(
            **{
                f"marker_{name}": Coalesce(MarkerText(name), Value(""), output_field=TextField())
                for name in markers
            }
        )
        .filter(stale)
    )


def _blocked_failures(version: str, now: datetime) -> QuerySet[PromptReconciliationFailure]:
    """Failures not to try now: still backing off, or out of attempts."""
    return PromptReconciliationFailure.objects.filter(policy_version=version).filter(
        Q(attempts__gte=settings.ELION_RECONCILE_MAX_ATTEMPTS) | Q(next_attempt_at__gt=now)
    )


def ready_candidates(markers: dict[str, str], now: datetime, after: UUID | None = None) -> QuerySet[Message]:
    """Stale prompts a batch may take now (of conversations after `after` in id order, when given)."""
    blocked = _blocked_failures(policy_version(markers), now).values("conversation_id")
    candidates = stale_prompts(markers).exclude(conversation_id__in=blocked)
    return candidates if after is None else candidates.filter(conversation_id__gt=after)


def remaining_failures(markers: dict[str, str]) -> QuerySet[PromptReconciliationFailure]:
    """Recorded failures whose prompt is still stale (a send may have fixed one since)."""
    return PromptReconciliationFailure.objects.filter(
        policy_version=policy_version(markers),
        conversation_id__in=stale_prompts(markers).values("conversation_id"),
    )


def completion_recorded(version: str) -> bool:
    return PromptReconciliationRun.objects.filter(policy_version=version, completed_at__isnull=False).exists()


@dataclass(frozen=True)
class ReconciliationStatus:
    policy_version: str
    completed: bool
    pending: int
    remaining_failures: int

    def as_dict(self) -> dict:
        return {"completed": self.completed, "pending": self.pending, "remaining_failures": self.remaining_failures}


def reconciliation_status() -> ReconciliationStatus:
    """What /api/health/, `continuity_status` and the admin page report.

    A recorded completion answers with one query (later starts skip the
    scan). Otherwise the stale prompts are counted; `completed` is true only
    when none is left, so remaining failures never read as completion.
    """
    markers = policy_markers()
    version = policy_version(markers)
    if completion_recorded(version):
        return ReconciliationStatus(version, True, 0, 0)
    pending = stale_prompts(markers).count()
    failures = 0
    if pending and PromptReconciliationFailure.objects.filter(policy_version=version).exists():
        failures = remaining_failures(markers).count()
    return ReconciliationStatus(version, pending == 0, pending, failures)


# --- Services --------------------------------------------------------------


@dataclass
class BatchResult:
    rebuilt: list[UUID] = field(default_factory=list)
    failed: list[UUID] = field(default_factory=list)
    # Stale prompts still ready for another batch right now.
    more: bool = False
    completed: bool = False
    # Where the next batch starts in conversation id order (None: from the first): the batches of one pass
    # walk the prompts once, so a pass over N stale prompts reads each once, not once per batch.
    after: UUID | None = None


def retry_delay(attempts: int) -> timedelta:
    """Exponential backoff after the `attempts`-th failure: base, 2×base, 4×base, …"""
    base = timedelta(seconds=settings.ELION_RECONCILE_RETRY_SECONDS)
    return min(base * (2 ** max(attempts - 1, 0)), MAX_RETRY_DELAY)


def reconciliation_run_for(markers: dict[str, str]) -> PromptReconciliationRun:
    # The unique policy_version makes two clusters agree on one row.
    run, _ = PromptReconciliationRun.objects.get_or_create(
        policy_version=policy_version(markers), defaults={"markers": markers}
    )
    return run


def _claim(markers: dict[str, str], now: datetime, batch_size: int, after: UUID | None = None) -> tuple[list[UUID], UUID | None]:
    """Lock up to `batch_size` conversations with a ready stale prompt after `after`, in id order; and the
    last conversation id the claim's window reached (where the next batch starts), None when it found none.

    Precondition: inside a transaction. Rows another reconciler (or a send)
    holds are skipped, and staleness is checked again after the lock: a
    candidate list read before another batch committed must not make us
    rebuild what it just rebuilt.
    """
    # A window in conversation order, so a batch reads a bounded slice of the
    # prompts rather than all of them; it is wider than the batch so rows
    # another reconciler holds still leave this one work. It starts after the
    # previous batch's, so a pass never re-reads the prompts it rebuilt.
    window = list(
        ready_candidates(markers, now, after)
        .order_by("conversation_id")
        .values_list("conversation_id", flat=True)[: batch_size * CLAIM_WINDOW]
    )
    if not window:
        return [], None
    locked = list(
        Conversation.objects.select_for_update(skip_locked=True)
        .filter(pk__in=window)
        .order_by("pk")
        .values_list("pk", flat=True)[:batch_size]
    )
    reached = locked[-1] if len(locked) == batch_size else window[-1]
    if not locked:
        return [], reached
    still_stale = set(stale_prompts(markers).filter(conversation_id__in=locked).values_list("conversation_id", flat=True))
    return [pk for pk in locked if pk in still_stale], reached


def _failure_record(version: str, conversation_id: UUID, error: Exception, now: datetime) -> None:
    """Precondition: the conversation's row is locked, so no other batch writes this row."""
    failure = PromptReconciliationFailure.objects.filter(policy_version=version, conversation_id=conversation_id).first()
    attempts = (failure.attempts if failure else 0) + 1
    values = {
        "attempts": attempts,
        "last_error": type(error).__name__[:200],
        "last_failed_at": now,
        "next_attempt_at": now + retry_delay(attempts),
    }
    if failure is None:
        PromptReconciliationFailure.objects.create(policy_version=version, conversation_id=conversation_id, **values)
    else:
        PromptReconciliationFailure.objects.filter(pk=failure.pk).update(**values)


def _rebuild(ids: list[UUID], version: str, now: datetime) -> tuple[list[UUID], list[UUID]]:
    """Rebuild the batch in one bulk pass; if that fails, one candidate at a time.

    Seed: "Older stored system prompts may predate this change. The app reconciles those dormant prompts
    in bounded background batches" / "Each candidate is rebuilt from the allowed static-prompt components
    while preserving its existing memory-snapshot membership and verbatim handoff."

    Precondition: inside a transaction holding the rows' locks. Savepoints
    keep one failing candidate from undoing the others.
    """
    if len(ids) > 1:
        try:
            with transaction.atomic():
                static_prompts_rebuild(ids)
            return ids, []
        except Exception:  # noqa: BLE001 - isolate the failing candidate(s) below
            logger.info("bulk prompt reconciliation failed; rebuilding %d candidates one by one", len(ids))
    rebuilt, failed = [], []
    for pk in ids:
        try:
            with transaction.atomic():
                static_prompts_rebuild([pk])
            rebuilt.append(pk)
        except Exception as exc:  # noqa: BLE001 - recorded, retried with backoff
            logger.warning("stored prompt of conversation %s could not be rebuilt: %s", pk, type(exc).__name__)
            _failure_record(version, pk, exc, now)
            failed.append(pk)
    return rebuilt, failed


def completion_record_if_done(markers: dict[str, str], now: datetime | None = None) -> bool:
    """Record completion for the current policy version if no stale prompt remains.

    A conditional UPDATE: recorded once, and never while any candidate (failed
    or not yet reached) is still stale.
    """
    version = policy_version(markers)
    if completion_recorded(version):
        return True
    if stale_prompts(markers).exists():
        return False
    run = reconciliation_run_for(markers)
    with transaction.atomic():
        # Re-check inside the transaction that writes the row.
        if stale_prompts(markers).exists():
            return False
        recorded = PromptReconciliationRun.objects.filter(pk=run.pk, completed_at__isnull=True).update(
            completed_at=now or timezone.now(), dispatch_until=None
        )
        PromptReconciliationFailure.objects.filter(policy_version=version).delete()
    if recorded:
        # Only the caller whose conditional UPDATE matched says so: one line per policy version.
        logger.info("prompt reconciliation completion recorded for policy version %s", version[:12])
    return True


def prompts_reconcile_batch(
    *, batch_size: int | None = None, now: datetime | None = None, after: UUID | None = None
) -> BatchResult:
    """Rebuild up to `batch_size` stale prompts that are ready now, of conversations after `after` in id
    order (the previous batch's `BatchResult.after`); record completion when none is left.

    Safe to run concurrently with itself, with sends and with memory writes.
    """
    batch_size = max(int(batch_size or settings.ELION_RECONCILE_BATCH_SIZE), 1)
    now = now or timezone.now()
    markers = policy_markers()
    version = policy_version(markers)
    if completion_recorded(version):
        return BatchResult(completed=True)
    run = reconciliation_run_for(markers)
    result = BatchResult()
    with transaction.atomic():
        ids, reached = _claim(markers, now, batch_size, after)
        if ids:
            result.rebuilt, result.failed = _rebuild(ids, version, now)
        if result.rebuilt:
            PromptReconciliationFailure.objects.filter(
                policy_version=version, conversation_id__in=result.rebuilt
            ).delete()
            PromptReconciliationRun.objects.filter(pk=run.pk).update(rebuilt=F("rebuilt") + len(result.rebuilt))
    # More after this batch's window; else (the pass is at its end) any left before it, from the first.
    if reached is not None and ready_candidates(markers, now, reached).exists():
        result.more, result.after = True, reached
    else:
        result.more = ready_candidates(markers, now).exists()
    if not result.more:
        result.completed = completion_record_if_done(markers, now)
    return result


def prompts_reconcile(
    *, batch_size: int | None = None, now: datetime | None = None, retry_failed: bool = False
) -> BatchResult:
    """Run batches until nothing is ready now (the foreground `reconcile_prompts`).

    `retry_failed` makes failures that are backing off or out of attempts
    ready again first (an operator's explicit retry).
    """
    markers = policy_markers()
    if retry_failed:
        PromptReconciliationFailure.objects.filter(policy_version=policy_version(markers)).update(
            attempts=0, next_attempt_at=now or timezone.now()
        )
    total = BatchResult()
    while True:
        batch = prompts_reconcile_batch(batch_size=batch_size, now=now, after=total.after)
        total.after = batch.after
        total.rebuilt += batch.rebuilt
        total.failed += batch.failed
        total.completed = batch.completed
        if not batch.more or not (batch.rebuilt or batch.failed):
            return total


def dispatch_claim(markers: dict[str, str], now: datetime) -> bool:
    """Take (or renew) the right to enqueue batches for this policy version.

    A conditional UPDATE checked by its row count, so two clusters' schedules
    never both start a chain of batches.
    """
    run = reconciliation_run_for(markers)
    claimed = (
        PromptReconciliationRun.objects.filter(pk=run.pk, completed_at__isnull=True)
        .filter(Q(dispatch_until__isnull=True) | Q(dispatch_until__lte=now))
        .update(dispatch_until=now + DISPATCH_LEASE)
    )
    return claimed == 1


def dispatch_renew(markers: dict[str, str], now: datetime) -> None:
    PromptReconciliationRun.objects.filter(policy_version=policy_version(markers), completed_at__isnull=True).update(
        dispatch_until=now + DISPATCH_LEASE
    )


def dispatch_release(markers: dict[str, str]) -> None:
    PromptReconciliationRun.objects.filter(policy_version=policy_version(markers)).update(dispatch_until=None)
