"""Refreshing many stored prompts without holding a lock across all of them.

A settings save rebuilds every stored prompt; a memory edit or delete every
prompt of a thread whose snapshot holds it; a folder hidden every prompt that
carries a handoff from one of its conversations (seed 000, "Memory changes and
prompt freshness", "Hidden Folders and Continuity Quarantine"). Those scopes
grow with the owner's conversations, so they are refreshed in two steps:

1. **Mark**, inside the operation's own transaction, after its writes and
   under `global_write_lock()` (`static_prompts_mark_stale`): the scope's
   conversation rows are locked, one statement inserts a `StalePrompt` row for
   every conversation in scope that has a stored prompt, and the lock row's
   `prompt_generation` is bumped. From the
   moment the operation commits, no send can use one of those prompts:
   `prompt_store.prompt_is_current` refuses a marked conversation's prompt, so
   the send rebuilds it from the current rows under the conversation's lock
   before it can reach the model (and clears the mark).
2. **Rebuild in batches** before the operation returns
   (`stale_prompts_settle`, through `refreshes_stale_prompts` on the
   service): a large scope on the queue's worker while the operation waits for
   the marks to clear, a small one in the operation's own process
   (`stale_prompts_refresh`); `ELION_PROMPT_REFRESH_BATCH` marked conversations at a time, in id
   order. Each batch reads its sources and builds its prompts holding no lock
   (on SQLite: no write transaction), then writes in one short transaction that
   locks only the batch's rows: the new texts of those still marked, and their
   marks cleared. A batch whose sources may have changed since it read them (the
   generation moved: another marking operation committed) is read again. The
   batches run after the outermost transaction commits (`refreshes_stale_prompts`
   nested, `refreshed_after_commit` around a view's block), never inside it.

**One runner on the queue at a time.** The queue's slices and the reconciliation tick take the lock row's
runner lease first (`prompt_refresh_until`, renewed before every batch, lapsing after `REFRESH_LEASE` when
its runner died); one that finds it held leaves the marks to the holder. The tick, every minute, used to
run a whole pass beside a running chain: two workers built the same batches side by side (both from the
lowest marked id) and on two cores left none to the sends. An operation's own rebuild takes no lease: it
never waits for a runner.

So the operation reports success only when every prompt it made stale has been
rewritten (the deleted memory's text, the hidden conversation's exchange are
gone from the stored prompts), and a send in between never sees a stale one. If
the process dies between the two steps, the marks stay: sends still rebuild
before use, and the reconciliation tick refreshes what is left
(`continuity.tasks`). docs/continuity.md, "Prompt refreshes", says the same.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import ParamSpec, TypeVar
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone
from django_q.tasks import async_task

from continuity.rules.prompt_store import prompt_rows_read, prompt_rows_rebuilt, prompt_rows_write
from memories.models import MemorySetLock
from transcript.models import Conversation, Message, Role, StalePrompt

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

# Set inside `refreshed_after_commit`: a service that marks prompts leaves their rebuild to the block's end.
_REFRESH_DEFERRED: ContextVar[bool] = ContextVar("prompt_refresh_deferred", default=False)


def prompt_generation() -> int:
    """How many marking operations have committed (0 before the lock row exists)."""
    return MemorySetLock.objects.filter(pk=1).values_list("prompt_generation", flat=True).first() or 0


def static_prompts_mark_stale(conversations: QuerySet[Conversation] | Iterable[UUID]) -> None:
    """Mark the stored prompts of `conversations` stale (step 1 above).

    Precondition: inside the operation's transaction, after its writes, holding `global_write_lock()` (so
    markings are serialised and the generation row exists). The rows are locked in id order first, as every
    other multi-row locker does, so a refresh batch holding some of them never deadlocks with us; the
    update that follows reads, after those locks, which of them have a stored prompt (a first send that
    held one committed its prompt by then).
    """
    scope = conversations.order_by().values("pk") if isinstance(conversations, QuerySet) else list(conversations)
    if not isinstance(scope, QuerySet) and not scope:
        return
    if connection.features.has_select_for_update:
        list(Conversation.all_objects.select_for_update().filter(pk__in=scope).order_by("pk").values_list("pk"))
    has_prompt = Message.objects.filter(conversation_id=OuterRef("pk"), role=Role.SYSTEM)
    prompted = Conversation.all_objects.filter(pk__in=scope).filter(Exists(has_prompt)).order_by().values("pk")
    _marks_insert(prompted)
    # Bumped even when every prompt in scope was already marked: a batch that read them before this
    # operation's writes must read them again.
    MemorySetLock.objects.filter(pk=1).update(prompt_generation=F("prompt_generation") + 1)


def _marks_insert(conversations: QuerySet) -> None:
    """A `StalePrompt` row for each of `conversations` (a query of their ids) not marked yet: one
    `INSERT … SELECT`, so no id travels through Python (the ORM inserts only the rows it is handed)."""
    select, params = conversations.query.sql_with_params()
    table = connection.ops.quote_name(StalePrompt._meta.db_table)
    column = connection.ops.quote_name(StalePrompt._meta.pk.column)
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({column}) {select} ON CONFLICT DO NOTHING", params)


def stale_prompts_waiting() -> bool:
    """Whether any conversation's stored prompt is marked stale (the reconciliation tick's question)."""
    return StalePrompt.objects.exists()


# While a refresh runs, the interpreter hands the GIL to another thread that asks for it after this long
# (Python's default: 5 ms). A refresh is Python work that rarely releases the GIL; a send in another thread of
# the same server releases it at every statement and, at the default, waits up to 5 ms to get it back each
# time (the convoy effect), so a send of some thirty statements paid a second send's time. Measured in one
# process with a refresh running: a send-like run of thirty statements ×1.9 of idle at 5 ms, ×1.1 at 0.5 ms
# (bench/results/many_conversations.md).
REFRESH_SWITCH_INTERVAL = 0.0005
_giving_way = {"refreshes": 0, "interval": None}
_giving_way_lock = threading.Lock()


@contextlib.contextmanager
def _gives_way_to_requests() -> Iterator[None]:
    """While inside (any refresh of the process is running): `REFRESH_SWITCH_INTERVAL`; the interpreter's own
    interval again when the last refresh ends."""
    with _giving_way_lock:
        if _giving_way["refreshes"] == 0:
            _giving_way["interval"] = sys.getswitchinterval()
            sys.setswitchinterval(min(REFRESH_SWITCH_INTERVAL, _giving_way["interval"]))
        _giving_way["refreshes"] += 1
    try:
        yield
    finally:
        with _giving_way_lock:
            _giving_way["refreshes"] -= 1
            if _giving_way["refreshes"] == 0:
                sys.setswitchinterval(_giving_way["interval"])


def stale_prompts_refresh(*, batch_size: int | None = None, until: float | None = None) -> int:
    """Rebuild every marked prompt in batches (step 2 above), in this process; returns how many were rewritten.
    With `until` (a `time.monotonic()` instant), no batch starts after it. An operation's own rebuild (its
    small scope, or the fallbacks of `stale_prompts_settle`): it takes no runner lease, so it never waits for
    a runner; the queue's runners go through `stale_prompts_refresh_leased`.

    Precondition: the caller's own transaction, if any, holds no lock another writer needs: a service calls
    this after its atomic block (`refreshes_stale_prompts`). Inside an outer transaction (a test) each batch
    is a savepoint of it, which is as correct and holds that transaction's locks.
    """
    batch_size = max(int(batch_size or settings.ELION_PROMPT_REFRESH_BATCH), 1)
    with _gives_way_to_requests():
        return _batches_refresh(batch_size, until, renew=lambda: True)


def stale_prompts_refresh_leased(*, until: float | None = None) -> int | None:
    """`stale_prompts_refresh` for the queue's runners (a slice of an operation's chain, the reconciliation
    tick), one at a time ("One runner" above): None, at once, while another holds the runner lease. A runner
    that finds its lease taken over (it was stalled past `REFRESH_LEASE`) stops before its next batch."""
    lease = RunnerLease()
    if not lease.take():
        return None
    try:
        batch_size = max(int(settings.ELION_PROMPT_REFRESH_BATCH), 1)
        with _gives_way_to_requests():
            return _batches_refresh(batch_size, until, renew=lease.renew)
    finally:
        lease.release()


# How long a runner's lease lasts unless renewed (before each batch): how long a runner that died keeps the
# others waiting. A batch of `ELION_PROMPT_REFRESH_BATCH` prompts takes well under a second.
REFRESH_LEASE = timedelta(seconds=30)


class RunnerLease:
    """The runner lease on the lock row (`MemorySetLock.prompt_refresh_until`), as one runner holds it: every
    update after the take is conditional on the time this runner wrote last, so a runner whose lease lapsed
    and was taken by another neither renews nor releases the other's."""

    def __init__(self) -> None:
        self.until: datetime | None = None

    def take(self) -> bool:
        """A conditional update judged by its count (the row made when no marking made it yet): False while
        another runner holds the lease."""
        now = timezone.now()
        until = now + REFRESH_LEASE
        free = Q(prompt_refresh_until__isnull=True) | Q(prompt_refresh_until__lte=now)
        if not MemorySetLock.objects.filter(free, pk=1).update(prompt_refresh_until=until):
            if MemorySetLock.objects.filter(pk=1).exists():
                return False
            try:
                with transaction.atomic():
                    MemorySetLock.objects.create(pk=1, prompt_refresh_until=until)
            except IntegrityError:
                return False  # another runner made the row, with its lease
        self.until = until
        return True

    def renew(self) -> bool:
        """Before each batch, holding no other lock (an operation that holds the lock row is waited for).
        False: the lease is another runner's now."""
        until = timezone.now() + REFRESH_LEASE
        if not MemorySetLock.objects.filter(pk=1, prompt_refresh_until=self.until).update(prompt_refresh_until=until):
            logger.warning("a prompt refresh runner lost its lease (stalled past %s); it stops", REFRESH_LEASE)
            self.until = None
            return False
        self.until = until
        return True

    def release(self) -> None:
        if self.until is not None:
            MemorySetLock.objects.filter(pk=1, prompt_refresh_until=self.until).update(prompt_refresh_until=None)
            self.until = None


def _batches_refresh(batch_size: int, until: float | None, *, renew: Callable[[], bool]) -> int:
    """The marked prompts in id order, `batch_size` at a time, until none is left after the last batch's,
    `until` passes, or `renew` answers that the runner may not go on."""
    rewritten = 0
    after: UUID | None = None
    while until is None or time.monotonic() < until:
        if not renew():
            break
        marked = StalePrompt.objects.all()
        if after is not None:
            marked = marked.filter(pk__gt=after)
        ids = list(marked.order_by("pk").values_list("pk", flat=True)[:batch_size])
        if not ids:
            break
        done = _batch_refresh(ids)
        while done is None:  # a marking operation committed meanwhile: the batch read again
            if not renew():
                return rewritten
            done = _batch_refresh(ids)
        rewritten += done
        after = ids[-1]
    return rewritten


def _batch_refresh(ids: list[UUID]) -> int | None:
    """One batch: read and build holding no lock, then write what is still marked in one short transaction.
    None when a marking operation committed meanwhile (the batch is read again)."""
    generation = prompt_generation()
    prompts = prompt_rows_read(ids)
    rows = prompt_rows_rebuilt(prompts)
    with transaction.atomic():
        # The rows first, then which of them are still marked, in a statement of its own: a mark a send or
        # a rebuild removed while this waited for its row lock must be seen gone (on PostgreSQL a condition
        # in the locking statement itself is judged as of before the wait).
        held = list(Conversation.all_objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk"))
        locked = set(StalePrompt.objects.filter(pk__in=[pk for pk, in held]).values_list("pk", flat=True))
        if not locked:
            return 0  # a send or another batch rebuilt them all meanwhile
        if prompt_generation() != generation:
            return None
        by_conversation = {pk: conversation_id for pk, conversation_id, *_ in prompts}
        rows = [row for row in rows if by_conversation[row[0]] in locked]
        prompt_rows_write(rows)
        StalePrompt.objects.filter(pk__in=locked).delete()
    return len(rows)


# The queue's task (`continuity.tasks`): named, not imported, since tasks sit above every layer.
REFRESH_TASK = "continuity.tasks.stale_prompts_refresh_slice"
REFRESH_TASK_NAME = "refresh stored prompts"
_MARKS_POLL_SECONDS = 0.1


def stale_prompts_settle() -> None:
    """Step 2 as an operation runs it, after its transaction committed: when it returns, no prompt is marked.

    A scope of fewer than `ELION_PROMPT_REFRESH_QUEUE_FROM` marked prompts is rebuilt here, in the operation's
    process: a queue round trip would cost it more than the batches. A larger one is handed to the queue's
    worker (`REFRESH_TASK`), a process of its own, so the web server's interpreter stays free for the sends
    made meanwhile (in the server's own threads they got about half of it: bench/results/many_conversations.md),
    and the operation waits, holding nothing, until the marks are gone.

    The batches run here instead when the worker cannot take them: when it makes no progress for
    `ELION_PROMPT_REFRESH_QUEUE_PATIENCE_MS` (no cluster running, every worker busy, a task that failed; the
    rest, `marks_wait_or_refresh`), when the queue refuses the task (its broker away), inside a transaction (a
    test's: the worker could not see the marks), and inside the cluster itself (an operation a task runs: this
    process is the worker it would wait for).
    """
    if (
        not settings.ELION_PROMPT_REFRESH_ON_QUEUE
        or settings.ELION_PROMPT_REFRESH_IN_PLACE
        or connection.in_atomic_block
    ):
        stale_prompts_refresh()
        return
    marked = stale_prompts_count()
    if marked == 0:
        return
    if marked < settings.ELION_PROMPT_REFRESH_QUEUE_FROM:
        stale_prompts_refresh()
        return
    try:
        async_task(REFRESH_TASK, task_name=REFRESH_TASK_NAME)
    except Exception:  # any broker's refusal (Redis away): the operation has committed; rebuild here
        logger.warning("the queue refused the prompt refresh task; the operation rebuilds its prompts itself",
                       exc_info=True)
        stale_prompts_refresh()
        return
    marks_wait_or_refresh(marked, patience=settings.ELION_PROMPT_REFRESH_QUEUE_PATIENCE_MS / 1000)


def stale_prompts_count() -> int:
    """How many stored prompts are marked stale (their `StalePrompt` rows)."""
    return StalePrompt.objects.count()


def marks_wait_or_refresh(marked: int, *, patience: float) -> bool:
    """Wait until no prompt is marked; whenever the count has not fallen for `patience` seconds, rebuild the
    rest here instead. Returns whether the marks were cleared elsewhere (by the worker, or sends).

    Both may run at once (the worker's task picked up late): each batch locks its rows and writes only those
    still marked, so a prompt is rewritten once and never from older sources (`_batch_refresh`)."""
    last_progress = time.monotonic()
    while marked:
        time.sleep(_MARKS_POLL_SECONDS)
        now_marked = stale_prompts_count()
        if now_marked < marked:
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress >= patience:
            stale_prompts_refresh()
            return False
        marked = now_marked
    return True


def refreshes_stale_prompts(service: Callable[P, R]) -> Callable[P, R]:
    """A service whose change marks prompts stale: its body runs atomically (as `@transaction.atomic`), then
    the marked prompts are rebuilt in batches (`stale_prompts_settle`) before it returns, outside its
    transaction, so no lock of it is held across the batches. Called from another such service, or inside
    `refreshed_after_commit`, the rebuild is left to the outermost one, after its transaction commits."""
    atomic_service = transaction.atomic(service)

    @functools.wraps(service)
    def refreshed(*args: P.args, **kwargs: P.kwargs) -> R:
        with _refresh_deferred() as outermost:
            result = atomic_service(*args, **kwargs)
        if outermost:
            stale_prompts_settle()
        return result

    return refreshed


@contextlib.contextmanager
def refreshed_after_commit() -> Iterator[None]:
    """A block of writes that commit together (as `transaction.atomic()`) and may call services that mark
    prompts stale (`refreshes_stale_prompts`): their prompts are rebuilt once, after the block commits and
    before it is left. Inside a plain `transaction.atomic()` the batches would run inside the caller's
    transaction and hold its locks (on SQLite the database's write lock) across every prompt, so every
    send would wait for the whole refresh. A block that raises rolls its marks back and rebuilds nothing."""
    with _refresh_deferred() as outermost, transaction.atomic():
        yield
    if outermost:
        stale_prompts_settle()


@contextlib.contextmanager
def _refresh_deferred() -> Iterator[bool]:
    """While inside: services that mark prompts leave their rebuild to the outermost block. Yields whether this
    block is the outermost (the one that rebuilds)."""
    if _REFRESH_DEFERRED.get():
        yield False
        return
    token = _REFRESH_DEFERRED.set(True)
    try:
        yield True
    finally:
        _REFRESH_DEFERRED.reset(token)
