"""A process's copy of its long conversations' rows, brought up to date by asking what changed.

A send reads every row of its conversation under the conversation's lock
(`continuity.rules.request_store.send_context_load`): the tree, to find the
branch, check bindings and build the request. For a thread of months that is
thousands of rows turned into model instances on every send, the one cost
that grew with thread length. Here a process keeps the rows it read and, on
the next send, asks the database only for what changed since:

    rows whose `updated_at` is at or after (the newest `updated_at` seen − RECHECK_WINDOW),
    rows that are `streaming`, and the stored prompt

in one query, merged over the kept copy. What makes that sound:

* Every write to a message row moves its `updated_at` (`auto_now` on save;
  every queryset `.update()` of content, parts, status or bindings sets it),
  except the lease renewal, the stop request and the lease expiry, which only
  touch `streaming` rows, which are always read again.
* A row is stamped before its transaction commits. Writers that hold the
  conversation's row lock (sends, retries, rewinds, legacy binding) stamp
  after the previous send let go of it, so after anything that send saw.
  Writers that don't (a reply's own writes, the stale-stream sweep, closing
  interrupted tool calls, dropping refused reasoning) write in short
  transactions; one committed up to RECHECK_WINDOW after its stamp (SQLite
  waits at most 20 s for its write lock) is still seen. The stored prompt is
  rebuilt for every conversation in one long transaction after a settings
  save, so it is read every time.
* Message rows are never deleted one by one; a conversation's rows go with it
  (`transcript.deletion`), and the conversation is then never
  selectable again.
* Each process checks with the database on every read, so several processes
  (Daphne, queue workers) each stay current; nothing is shared between them.

Callers get a fresh dict each time (extending it never touches the kept
copy), and must treat the rows as read-only: the same instances serve the
next send. Bounded by `ELION_TREE_CACHE_ROWS` rows in all, least recently
used conversations first out; only conversations of at least
`ELION_TREE_CACHE_MIN_ROWS` rows are kept (a short thread is cheaper to read
whole). Imports models and the tree's one walk (`transcript.tree.walk_up`) only.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db.models import Q

from conversations.models import Conversation, Message, MessageStatus, Role
from transcript.tree import walk_up

RECHECK_WINDOW = timedelta(seconds=60)


@dataclass(frozen=True)
class _Kept:
    rows: dict[UUID, Message]  # never mutated once kept: a changed row replaces the whole dict
    newest_seen: datetime
    columns: Counter[BindingColumns]  # `Message.binding_columns` of every row but the stored prompt, counted


BindingColumns = tuple[str, str, str, str, str, str]  # `Message.binding_columns`


@dataclass(frozen=True)
class TreeRead:
    """One conversation's rows as a send uses them (`conversation_read`)."""

    tree: dict[UUID, Message]  # every row but the stored prompt, by id: the caller's own dict
    prompt: Message | None  # the stored prompt (None before the first send stores it)
    binding_counts: Mapping[BindingColumns, int]  # `Message.binding_columns` of the tree's rows, counted; read-only
    streaming: list[Message]  # the tree's rows that are streaming


_KEPT: OrderedDict[UUID, _Kept] = OrderedDict()
_LOCK = threading.Lock()


def conversation_rows(conversation: Conversation) -> dict[UUID, Message]:
    """Every message row of `conversation` (its stored prompt included), by id, as the database has them now.

    Precondition: the caller holds the conversation's row lock, as a send does,
    so no other send or rewind moves its rows meanwhile.
    """
    rows, _ = _read(conversation)
    return dict(rows)


def conversation_tree(conversation: Conversation) -> tuple[dict[UUID, Message], Message | None]:
    """`conversation_rows` split as a send uses them: the tree (every row but the stored prompt), and the
    stored prompt (None before the first send stores it). Same precondition."""
    read = conversation_read(conversation)
    return read.tree, read.prompt


def conversation_read(conversation: Conversation) -> TreeRead:
    """`conversation_tree`, with the counts and streaming rows a send checks (nothing here passes over
    every row once the conversation is kept). Same precondition."""
    rows, read = _read(conversation)
    tree = dict(rows)
    prompts = [tree.pop(message.id) for message in read.prompts if message.id in tree]
    streaming = [tree[message.id] for message in read.streaming if message.id in tree]
    return TreeRead(tree, prompts[0] if prompts else None, read.counts, streaming)


@dataclass(frozen=True)
class _Read:
    prompts: list[Message]  # every stored-prompt row (always among the rows read)
    streaming: list[Message]  # every streaming row (likewise)
    counts: Counter[BindingColumns]


def _read(conversation: Conversation) -> tuple[dict[UUID, Message], _Read]:
    """The rows (a dict the caller must not change), and among them the stored prompt and the streaming
    rows, with the rows' `Message.binding_columns` counted (the stored prompt's aside): read whole, or the kept
    copy with what changed since merged in."""
    with _LOCK:
        kept = _KEPT.get(conversation.id)
        if kept is not None:
            _KEPT.move_to_end(conversation.id)
    rows_of = Message.objects.filter(conversation_id=conversation.id)
    if kept is None:
        read = list(rows_of)
        rows = {message.id: message for message in read}
        counts = Counter(message.binding_columns for message in read if message.role != Role.SYSTEM)
        with _LOCK:
            _branch_cut_changed(conversation.id, rows)  # new instances, every one
    else:
        recent = kept.newest_seen - RECHECK_WINDOW
        # Each alternative names the conversation, so each is one index's range
        # (migration 0013): the read costs what changed, not the thread's length.
        mine = Q(conversation_id=conversation.id)
        read = list(
            Message.objects.filter(
                (mine & Q(updated_at__gte=recent)) | (mine & Q(status=MessageStatus.STREAMING)) | (mine & Q(role=Role.SYSTEM))
            ).order_by()  # in no order: the model's ordering would join the conversation and sort
        )
        with _LOCK:
            branch = _BRANCHES.get(conversation.id)
        changed: dict[UUID, Message] = {}
        adopted: dict[UUID, Message] = {}
        for message in read:
            before = kept.rows.get(message.id)
            if before is None and branch is not None:
                # A row this process wrote and walked since it last read (a send's new turn): its own instance.
                before = _on_branch(branch, message.id)
                if _unchanged(before, message):
                    adopted[message.id] = before
                    continue
            if not _unchanged(before, message):
                changed[message.id] = message
        rows = {**kept.rows, **adopted, **changed} if changed or adopted else kept.rows
        counts = _recounted(kept, {**adopted, **changed})
        if changed:
            with _LOCK:
                _branch_cut_changed(conversation.id, changed)
    newest = max((message.updated_at for message in read), default=None)
    if kept is not None:
        newest = kept.newest_seen if newest is None else max(newest, kept.newest_seen)
    _keep(conversation.id, rows, newest, counts)
    # Every stored prompt and streaming row is among the rows read (the kept path always reads them again).
    return rows, _Read(
        prompts=[message for message in read if message.role == Role.SYSTEM],
        streaming=[message for message in read if message.status == MessageStatus.STREAMING],
        counts=counts,
    )


def _recounted(kept: _Kept, changed: dict[UUID, Message]) -> Counter[BindingColumns]:
    """The kept rows' counts with the changed rows' old columns taken out and their new ones put in."""
    if not changed:
        return kept.columns
    counts = Counter(kept.columns)
    for pk, message in changed.items():
        before = kept.rows.get(pk)
        if before is not None and before.role != Role.SYSTEM:
            counts[before.binding_columns] -= 1
        if message.role != Role.SYSTEM:
            counts[message.binding_columns] += 1
    return +counts  # without the columns no row has any more


def _unchanged(kept: Message | None, read: Message) -> bool:
    """Is the row read again the row kept? Then the kept instance (and what was built from it) stays.

    The same `updated_at` and status, and not streaming: a streaming row's
    lease and stop request change without moving `updated_at`.
    """
    return (
        kept is not None
        and read.status != MessageStatus.STREAMING
        and kept.status == read.status
        and kept.updated_at == read.updated_at
    )


@dataclass(frozen=True)
class BranchRead:
    """A branch as `kept_branch_read` found it: root first, with what lets a caller build on its last read.

    `read_number` numbers this process's branch reads (of every conversation);
    `unchanged` is how many leading messages are the very instances (same
    rows, unchanged) that read `follows` returned first (0: no such read). A caller that
    keeps something derived from each read (`continuity.rules.kept_history`) reuses
    what it derived from those leading messages and derives only the rest.
    """

    messages: list[Message]
    positions: Mapping[UUID, int]  # id → index in `messages`; read-only
    read_number: int
    follows: int
    unchanged: int


def kept_branch(conversation_id: UUID, rows: dict[UUID, Message], tip_id: UUID | None) -> list[Message]:
    """`transcript.tree.walk_to_root(rows, tip_id)`, walking only what this process has not walked before (`kept_branch_read`)."""
    return kept_branch_read(conversation_id, rows, tip_id).messages


def kept_branch_read(conversation_id: UUID, rows: dict[UUID, Message], tip_id: UUID | None) -> BranchRead:
    """Root → `tip_id` over `rows` (a `conversation_rows` / `conversation_tree` answer), walking only what
    this process has not walked before in the conversation.

    The last branch walked here is kept; a new tip's walk stops at the first
    message on its still-valid part and takes the rest from it. That part is
    still the very rows `rows` holds: `_read` cuts the kept branch before the
    first row on it that changed (a changed row is a new instance; the usual
    one is the last reply, finished since), and the two ends are checked here
    too, so a `rows` from anywhere else is walked afresh.
    """
    with _LOCK:
        last = _BRANCHES.get(conversation_id)
    read_number = next(_READ_NUMBERS)
    position = last.positions if last is not None else {}
    valid = last.valid if last is not None else 0
    # The walk stops at the first message on the kept branch's still-valid part (`BrokenTree` on a broken step).
    walked = list(walk_up(rows, tip_id, until=lambda pk: position.get(pk, valid) < valid))
    current = walked[-1].parent_id if walked else tip_id
    walked.reverse()
    if current is None:
        branch, positions, meets = walked, {}, 0
    else:
        meets = position[current] + 1
        prefix = last.branch[:meets]
        if rows.get(prefix[0].id) is not prefix[0] or rows.get(prefix[-1].id) is not prefix[-1]:
            with _LOCK:
                if _BRANCHES.get(conversation_id) is last:
                    _BRANCHES[conversation_id] = _Branch([], {}, last.read_number, 0)
            return kept_branch_read(conversation_id, rows, tip_id)
        branch = prefix + walked
        # The kept positions (a copy, in C) less those past where the new tip meets the branch: after a send
        # that is the cut-off tail, after a retry or a rewind the turns left behind.
        positions = dict(last.positions)
        for message in last.branch[meets:]:
            del positions[message.id]
    positions.update((message.id, index) for index, message in enumerate(walked, start=len(branch) - len(walked)))
    if conversation_id in _KEPT:
        with _LOCK:
            _BRANCHES[conversation_id] = _Branch(branch, positions, read_number, len(branch))
    return BranchRead(branch, positions, read_number, last.read_number if last is not None else 0, meets)


@dataclass(frozen=True)
class _Branch:
    branch: list[Message]
    positions: dict[UUID, int]  # every message of `branch`, never changed once kept
    read_number: int
    valid: int  # branch[:valid] are still the rows the tree cache holds; the rest changed since


_BRANCHES: dict[UUID, _Branch] = {}
_READ_NUMBERS = itertools.count(1)


def _on_branch(branch: _Branch, message_id: UUID) -> Message | None:
    index = branch.positions.get(message_id)
    return branch.branch[index] if index is not None and index < branch.valid else None


def _branch_cut_changed(conversation_id: UUID, changed: Iterable[UUID]) -> None:
    """A changed row on the kept branch cuts it there: the next read walks from it again (and counts on)."""
    last = _BRANCHES.get(conversation_id)
    if last is None or not last.valid:
        return
    cut = min((index for pk in changed if (index := last.positions.get(pk, last.valid)) < last.valid), default=None)
    if cut is not None:
        _BRANCHES[conversation_id] = _Branch(last.branch, last.positions, last.read_number, cut)


def _keep(
    conversation_id: UUID, rows: dict[UUID, Message], newest: datetime | None, counts: Counter[BindingColumns]
) -> None:
    limit = settings.ELION_TREE_CACHE_ROWS
    if newest is None or len(rows) < settings.ELION_TREE_CACHE_MIN_ROWS or len(rows) > limit:
        with _LOCK:
            _KEPT.pop(conversation_id, None)
            _BRANCHES.pop(conversation_id, None)
        return
    with _LOCK:
        _KEPT[conversation_id] = _Kept(rows, newest, counts)
        _KEPT.move_to_end(conversation_id)
        total = sum(len(kept.rows) for kept in _KEPT.values())
        while total > limit and len(_KEPT) > 1:
            dropped_id, dropped = _KEPT.popitem(last=False)
            _BRANCHES.pop(dropped_id, None)
            total -= len(dropped.rows)


def tree_cache_clear() -> None:
    """Forget every kept copy (tests; a process that wants its memory back)."""
    with _LOCK:
        _KEPT.clear()
        _BRANCHES.clear()


def tree_cache_size() -> int:
    """How many rows this process keeps."""
    with _LOCK:
        return sum(len(kept.rows) for kept in _KEPT.values())
