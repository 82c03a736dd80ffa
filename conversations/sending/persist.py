"""Running a reply's database writes off the event loop (`persist`).

Imports Django only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from asgiref.sync import sync_to_async
from django.db import connection as db_connection

T = TypeVar("T")


def persist(fn: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    """Run a reply's database write on a worker thread of its own.

    Not thread-sensitive: the one shared sync thread may be busy running a
    sync middleware chain that is itself waiting for this reply (a
    `?stream=false` send), which would deadlock.
    The worker's connection is closed after each write, which hands a pooled
    PostgreSQL connection back: worker threads outlive no request that would
    otherwise close it, and a pool drained by idle workers stalls every send.
    """

    def write(*args: object, **kwargs: object) -> T:
        try:
            return fn(*args, **kwargs)
        finally:
            db_connection.close()

    return sync_to_async(write, thread_sensitive=False)
