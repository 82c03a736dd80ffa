"""A process's copy of its long conversations' rows, brought up to date by asking what changed.

A send reads every row of its conversation under the conversation's lock
(`continuity.request_building.send_context_load`): the tree, to find the
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
  (`conversations.transcript.deletion`), and the conversation is then never
  selectable again.
* Each process checks with the database on every read, so several processes
  (Daphne, queue workers) each stay current; nothing is shared between them.

Callers get a fresh dict each time (extending it never touches the kept
copy), and must treat the rows as read-only: the same instances serve the
next send. Bounded by `ELION_TREE_CACHE_ROWS` rows in all, least recently
used conversations first out; only conversations of at least
`ELION_TREE_CACHE_MIN_ROWS` rows are kept (a short thread is cheaper to read
whole). Imports models only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db.models import Q

from conversations.models import Conversation, Message, MessageStatus, Role

RECHECK_WINDOW = timedelta(seconds=60)


@dataclass(frozen=True)
class _Kept:
    rows: dict[UUID, Message]  # never mutated once kept: a changed row replaces the whole dict
    newest_seen: datetime


_KEPT: OrderedDict[UUID, _Kept] = OrderedDict()
_LOCK = threading.Lock()


def conversation_rows(conversation: Conversation) -> dict[UUID, Message]:
    """Every message row of `conversation` (its stored prompt included), by id, as the database has them now.

    Precondition: the caller holds the conversation's row lock, as a send does,
    so no other send or rewind moves its rows meanwhile.
    """
    with _LOCK:
        kept = _KEPT.get(conversation.id)
        if kept is not None:
            _KEPT.move_to_end(conversation.id)
    rows_of = Message.objects.filter(conversation_id=conversation.id)
    if kept is None:
        read = list(rows_of)
        rows = {message.id: message for message in read}
    else:
        recent = kept.newest_seen - RECHECK_WINDOW
        read = list(rows_of.filter(Q(updated_at__gte=recent) | Q(status=MessageStatus.STREAMING) | Q(role=Role.SYSTEM)))
        rows = {**kept.rows, **{message.id: message for message in read}}
    newest = max((message.updated_at for message in read), default=None)
    if kept is not None:
        newest = kept.newest_seen if newest is None else max(newest, kept.newest_seen)
    _keep(conversation.id, rows, newest)
    return dict(rows)


def _keep(conversation_id: UUID, rows: dict[UUID, Message], newest: datetime | None) -> None:
    limit = settings.ELION_TREE_CACHE_ROWS
    if newest is None or len(rows) < settings.ELION_TREE_CACHE_MIN_ROWS or len(rows) > limit:
        with _LOCK:
            _KEPT.pop(conversation_id, None)
        return
    with _LOCK:
        _KEPT[conversation_id] = _Kept(rows, newest)
        _KEPT.move_to_end(conversation_id)
        total = sum(len(kept.rows) for kept in _KEPT.values())
        while total > limit and len(_KEPT) > 1:
            _, dropped = _KEPT.popitem(last=False)
            total -= len(dropped.rows)


def tree_cache_clear() -> None:
    """Forget every kept copy (tests; a process that wants its memory back)."""
    with _LOCK:
        _KEPT.clear()


def tree_cache_size() -> int:
    """How many rows this process keeps."""
    with _LOCK:
        return sum(len(kept.rows) for kept in _KEPT.values())
