"""The database or the disk failing under a request, answered as what it is: never a 500, never a hang.

- No pooled connection within `ELION_DB_POOL_TIMEOUT` while the server answers:
  503 `database_busy` with `Retry-After` (SQLite: its write lock held past the
  busy timeout).
- The database cannot be reached (refused, shut down, the connection lost):
  503 `database_unavailable` with `Retry-After`; a page gets a short HTML
  page saying "Elion can't reach its database".
- No space left (ENOSPC, SQLite's "database or disk is full"): 507
  `insufficient_storage`.
- Once the database is known unreachable, `DatabaseBreakerMiddleware` answers
  503 `database_unavailable` at once until a background probe connects again
  (`elion.base.database_breaker`).

`database_outage` classifies an exception (its whole cause chain);
`elion.base.service_errors` and `elion.base.api_errors.server_error` turn it into the answer.
`connection_release` hands the calling thread's connection back (to the pool
on PostgreSQL) so a streaming response holds none while it waits.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import threading
import time
from collections.abc import Callable

from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from elion.base.database_breaker import breaker_open, breaker_trip
from elion.base.errors import ServiceError

logger = logging.getLogger(__name__)

BUSY_RETRY_SECONDS = 2
UNAVAILABLE_RETRY_SECONDS = 5


class DatabaseBusy(ServiceError):
    status = 503
    code = "database_busy"


class DatabaseUnavailable(ServiceError):
    status = 503
    code = "database_unavailable"


class InsufficientStorage(ServiceError):
    status = 507
    code = "insufficient_storage"


BUSY = "Every database connection is in use; try again in a moment."
UNAVAILABLE = "Elion can't reach its database; nothing was changed. Try again once it is back."
FULL = "The disk holding Elion's data is full; nothing was stored. Free some space and try again."


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _is_pool_timeout(exc: BaseException) -> bool:
    return type(exc).__name__ == "PoolTimeout" and type(exc).__module__.startswith("psycopg_pool")


def database_outage(exc: BaseException) -> ServiceError | None:
    """The answer for a database or storage failure, or None when `exc` is neither."""
    chain = _chain(exc)
    for item in chain:
        if isinstance(item, OSError) and item.errno in (errno.ENOSPC, errno.EDQUOT):
            return InsufficientStorage(FULL)
        if "database or disk is full" in str(item):
            return InsufficientStorage(FULL)
    if any(_is_pool_timeout(item) for item in chain):
        if database_reachable():
            return DatabaseBusy(BUSY)
        breaker_trip()
        return DatabaseUnavailable(UNAVAILABLE)
    if not any(isinstance(item, OperationalError | InterfaceError) for item in chain):
        return None
    message = " ".join(str(item) for item in chain).lower()
    if "database is locked" in message and any(isinstance(item, sqlite3.Error) for item in chain):
        return DatabaseBusy(BUSY)
    if isinstance(exc, DatabaseError) and connection.vendor == "sqlite" and "unable to open" not in message:
        return None  # a SQLite statement's own error: a bug, not an outage
    breaker_trip()  # known down: later requests are answered at once until a probe connects
    return DatabaseUnavailable(UNAVAILABLE)


_probe_lock = threading.Lock()
_last_probe = {"at": float("-inf"), "reachable": True}
PROBE_SECONDS = 2.0


def database_reachable() -> bool:
    """Can a fresh connection (outside the pool) reach the server now? A pool timeout is `busy`
    when it can, `unavailable` when it cannot.

    One probe at a time per process, its answer kept for 2 s: requests timing out together
    (a full pool) must not open a connection each."""
    if connection.vendor != "postgresql":
        return True
    if time.monotonic() - _last_probe["at"] < PROBE_SECONDS or not _probe_lock.acquire(blocking=False):
        return bool(_last_probe["reachable"])
    try:
        _last_probe["reachable"] = _probe()
        _last_probe["at"] = time.monotonic()
    finally:
        _probe_lock.release()
    return bool(_last_probe["reachable"])


def _probe() -> bool:
    import psycopg

    params = connection.get_connection_params()
    params.pop("pool", None)
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params["connect_timeout"] = 2
    try:
        psycopg.connect(**params).close()
    except psycopg.Error:
        return False
    return True


def retry_after(error: ServiceError) -> int | None:
    if isinstance(error, DatabaseBusy):
        return BUSY_RETRY_SECONDS
    if isinstance(error, DatabaseUnavailable):
        return UNAVAILABLE_RETRY_SECONDS
    return None


OUTAGE_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
    "<body><h1>{title}</h1><p>{detail}</p></body></html>"
)
PAGE_TITLES = {
    "database_unavailable": "Elion can't reach its database",
    "database_busy": "Elion's database is busy",
    "insufficient_storage": "Elion's disk is full",
}


def outage_response(request: HttpRequest, error: ServiceError) -> HttpResponse:
    """The JSON shape under /api/, a short HTML page elsewhere; logged as one line."""
    logger.warning("%s on %s %s", error.code, request.method, request.path)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(error.as_dict(), status=error.status)
    else:
        title = PAGE_TITLES.get(error.code, "Elion can't answer now")
        response = HttpResponse(OUTAGE_PAGE.format(title=title, detail=error.detail), status=error.status)
    seconds = retry_after(error)
    if seconds is not None:
        response["Retry-After"] = str(seconds)
    response._has_been_logged = True  # one line above, not Django's traceback
    return response


def connection_release() -> None:
    """Close this thread's connection (a pooled one goes back to the pool), unless a transaction
    is open on it (then its owner closes it)."""
    if not connection.in_atomic_block:
        connection.close()


class DatabaseBreakerMiddleware:
    """While the database is known down (`elion.base.database_breaker`), the 503 `database_unavailable` at
    once, before anything waits on the database (the pool's timeout was 10 s a request, the health check's too)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if breaker_open():
            return outage_response(request, DatabaseUnavailable(UNAVAILABLE))
        return self.get_response(request)
