"""SQLite with a small pool of idle connections (`ENGINE: elion.base.db.backends.sqlite3`).

Django closes a request's connection when the request ends, and under ASGI
each request's sync code runs in a new thread, so `CONN_MAX_AGE` does not
help: every send opened a new SQLite connection and paid for it before the
first streamed token (connect, the PRAGMAs, SQLite parsing the schema, empty
statement and page caches: ≈ 4 ms on the bench VM, `bench/send_overhead.py`)
and again when it closed (the last connection to close checkpoints the WAL).

Here a closed wrapper hands its raw connection to a bounded module-level
pool instead, and the next wrapper to connect (in any thread) takes it. A
pooled connection is always idle: an open transaction is rolled back before
it goes back, and one closed inside an atomic block is really closed.

Never pooled: in-memory databases (closing one destroys it; Django never
closes them anyway), and connections opened in another process. After a
fork (django-q2 forks its workers) the child starts with an empty pool and
never closes or reuses a connection its parent opened: closing a wrapper
that still holds one drops it (kept referenced, so never finalised).

The pool is keyed by the database file and the connection options, and a
pooled connection whose file was replaced (deleted and created again) is
dropped rather than reused. `close_pool()` closes the idle connections of
one database. `connections.close_all()` (request and test teardown) hands
connections back like any close; the test database's creation and
destruction close the idle connections to its file before removing it
(`pool_close_file`), and every pool is closed at interpreter exit.

`OPTIONS["pool"]`: `True` (the default here) or `{"max_idle": N}`; `False`
turns pooling off.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sqlite3
import threading
from dataclasses import dataclass

from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper
from django.db.backends.sqlite3.creation import DatabaseCreation as SQLiteDatabaseCreation

DEFAULT_MAX_IDLE = 8


@dataclass
class _Idle:
    connection: object  # sqlite3.Connection
    file_id: tuple[int, int] | None


_lock = threading.Lock()
_pools: dict[tuple, list[_Idle]] = {}
_owner_pid = os.getpid()
# Connections inherited across a fork: kept referenced so the child never
# finalises (closes, checkpoints) a connection that belongs to its parent.
_inherited: list[object] = []


def _after_fork_in_child() -> None:
    global _lock, _owner_pid
    _lock = threading.Lock()  # the parent may have held it while forking
    for idle in _pools.values():
        _inherited.extend(entry.connection for entry in idle)
    _pools.clear()
    _owner_pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


def _close_quietly(connection: sqlite3.Connection) -> None:
    with contextlib.suppress(Exception):  # a broken connection is being discarded anyway
        connection.close()


def pool_take(key: tuple, path: str) -> sqlite3.Connection | None:
    """An idle connection for `key` whose file is still the one at `path`, or None."""
    if os.getpid() != _owner_pid:
        return None
    current = _file_id(path)
    stale = []
    found = None
    with _lock:
        idle = _pools.get(key, [])
        while idle:
            entry = idle.pop()
            if entry.file_id == current:
                found = entry.connection
                break
            stale.append(entry.connection)
    for connection in stale:
        _close_quietly(connection)
    return found


def pool_put(key: tuple, path: str, connection: sqlite3.Connection, max_idle: int) -> bool:
    """Keep an idle connection for reuse; False when the pool is full (the caller closes it)."""
    if os.getpid() != _owner_pid:
        return False
    entry = _Idle(connection, _file_id(path))
    if entry.file_id is None:
        # The file is gone (moved, deleted: an outage): an entry without identity would match any later
        # lookup that finds no file either, and serve the old file's rows from its open handle.
        return False
    with _lock:
        idle = _pools.setdefault(key, [])
        if len(idle) >= max_idle:
            return False
        idle.append(entry)
    return True


def pool_close(key: tuple | None = None) -> int:
    """Close the idle connections of one pool (or of all); returns how many."""
    with _lock:
        if key is None:
            drained = [entry for idle in _pools.values() for entry in idle]
            _pools.clear()
        else:
            drained = _pools.pop(key, [])
    for entry in drained:
        _close_quietly(entry.connection)
    return len(drained)


def pool_close_file(path: str) -> int:
    """Close the idle connections of every pool on the database file at `path`."""
    target = os.path.realpath(str(path))
    with _lock:
        keys = [key for key in _pools if key[0] == target]
    return sum(pool_close(key) for key in keys)


def pool_size(key: tuple | None = None) -> int:
    with _lock:
        if key is None:
            return sum(len(idle) for idle in _pools.values())
        return len(_pools.get(key, []))


def _close_all_at_exit() -> None:
    if os.getpid() == _owner_pid:
        pool_close()


atexit.register(_close_all_at_exit)


class DatabaseCreation(SQLiteDatabaseCreation):
    """The test database file is removed and made anew: its pooled connections go first."""

    def _create_test_db(self, verbosity: int, autoclobber: bool, keepdb: bool = False) -> str:
        name = self._get_test_db_name()
        if not keepdb and not self.is_in_memory_db(name):
            pool_close_file(name)
        return super()._create_test_db(verbosity, autoclobber, keepdb)

    def _destroy_test_db(self, test_database_name: str, verbosity: int) -> None:
        if test_database_name and not self.is_in_memory_db(test_database_name):
            pool_close_file(test_database_name)
        return super()._destroy_test_db(test_database_name, verbosity)


class DatabaseWrapper(SQLiteDatabaseWrapper):
    creation_class = DatabaseCreation

    def get_connection_params(self) -> dict:
        params = super().get_connection_params()
        option = params.pop("pool", True)
        self._max_idle = 0
        if option and not self.is_in_memory_db():
            self._max_idle = int(option.get("max_idle", DEFAULT_MAX_IDLE)) if isinstance(option, dict) else DEFAULT_MAX_IDLE
        return params

    def _pool_key(self, params: dict) -> tuple | None:
        """The pool for connections made with `params` (None: not pooled)."""
        if not self._max_idle:
            return None
        path = os.path.realpath(str(params["database"]))
        options = tuple(sorted((name, repr(value)) for name, value in params.items() if name != "database"))
        return (path, options, tuple(self.init_commands))

    def close_pool(self) -> int:
        """Close this database's idle pooled connections (its file is about to go, or tests end)."""
        key = self._pool_key(self.get_connection_params())
        return pool_close(key) if key is not None else 0

    def get_new_connection(self, conn_params: dict) -> sqlite3.Connection:
        key = self._pool_key(conn_params)
        connection = pool_take(key, key[0]) if key is not None else None
        if connection is None:
            connection = super().get_new_connection(conn_params)
        self._pooled_from = (key, os.getpid()) if key is not None else None
        return connection

    def _close(self) -> None:
        origin = getattr(self, "_pooled_from", None)
        connection = self.connection
        if connection is not None and origin is not None and origin[1] != os.getpid():
            _inherited.append(connection)  # opened by the parent: dropped here, never closed or reused
            return None
        if connection is None or origin is None or self.in_atomic_block:
            return super()._close()
        key = origin[0]
        try:
            if connection.in_transaction:
                connection.rollback()
        except Exception:  # noqa: BLE001 - not reusable: close it as Django would
            return super()._close()
        if not pool_put(key, key[0], connection, self._max_idle):
            return super()._close()
        return None
