"""The pooled SQLite backend (`elion.base.db.backends.sqlite3`), on real database files.

Each test makes its own wrappers on its own files (whatever DATABASE_URL the
suite runs with), so the pools here never meet the test database's.
"""

from __future__ import annotations

import os
import sqlite3
import threading

import pytest
from django.conf import settings

from elion.base.db.backends.sqlite3 import base as pool


def wrapper(path, **options):
    return pool.DatabaseWrapper(
        {
            "ENGINE": "elion.base.db.backends.sqlite3",
            "NAME": str(path),
            "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL;", "transaction_mode": "IMMEDIATE", **options},
            "ATOMIC_REQUESTS": False,
            "AUTOCOMMIT": True,
            "CONN_MAX_AGE": 0,
            "CONN_HEALTH_CHECKS": False,
            "TIME_ZONE": None,
            "USER": "",
            "PASSWORD": "",
            "HOST": "",
            "PORT": "",
            "TEST": {},
        },
        alias="pool_test",
    )


def in_thread(fn):
    """Run `fn` in a new thread (as ASGI runs each request's sync code) and return its result."""
    result, errors = [], []

    def run():
        try:
            result.append(fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]


@pytest.fixture
def db_file(tmp_path, django_db_blocker):
    path = tmp_path / "one.sqlite3"
    with django_db_blocker.unblock():
        setup = wrapper(path, pool=False)
        with setup.cursor() as cursor:
            cursor.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)")
        setup.close()
        yield path
        wrapper(path).close_pool()


def open_and_close(path, **options):
    """A request's life: connect in a new thread, use the connection, close it; the raw connection."""

    def request():
        db = wrapper(path, **options)
        with db.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM note")
        raw = db.connection
        db.close()
        return raw

    return in_thread(request)


def test_a_closed_connection_is_reused_by_the_next_request_in_another_thread(db_file):
    key = key_of(db_file)
    first = open_and_close(db_file)
    assert pool.pool_size(key) == 1

    def next_request():
        db = wrapper(db_file)
        db.ensure_connection()
        raw = db.connection
        with db.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('kept')")
            cursor.execute("SELECT text FROM note")
            rows = cursor.fetchall()
        db.close()
        return raw, rows

    second, rows = in_thread(next_request)
    assert second is first
    assert rows == [("kept",)]
    assert pool.pool_size(key) == 1


def test_an_open_transaction_is_rolled_back_before_the_connection_is_reused(db_file):
    def abandoned_request():
        db = wrapper(db_file)
        db.set_autocommit(False)  # a transaction Django never committed
        with db.cursor() as cursor:
            cursor.execute("INSERT INTO note (text) VALUES ('never committed')")
        raw = db.connection
        assert raw.in_transaction
        db.close()
        return raw

    first = in_thread(abandoned_request)
    assert not first.in_transaction

    def next_request():
        db = wrapper(db_file)
        with db.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM note")
            count = cursor.fetchone()[0]
        raw = db.connection
        db.close()
        return raw, count

    second, count = in_thread(next_request)
    assert second is first
    assert count == 0


def test_a_connection_closed_inside_an_atomic_block_is_closed_not_pooled(db_file):
    from django.db import connections, transaction

    def request():
        db = wrapper(db_file)
        connections["pool_test"] = db
        try:
            with transaction.atomic(using="pool_test"):
                with db.cursor() as cursor:
                    cursor.execute("INSERT INTO note (text) VALUES ('inside')")
                raw = db.connection
                db.close()  # Django keeps the wrapper in the transaction until the block ends
        finally:
            del connections["pool_test"]
        return raw

    raw = in_thread(request)
    with pytest.raises(sqlite3.ProgrammingError):
        raw.execute("SELECT 1")
    assert pool.pool_size(key_of(db_file)) == 0
    assert in_thread(lambda: count_notes(db_file)) == 0


def count_notes(path) -> int:
    db = wrapper(path)
    with db.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM note")
        count = cursor.fetchone()[0]
    db.close()
    return count


def key_of(path, **options) -> tuple:
    db = wrapper(path, **options)
    return db._pool_key(db.get_connection_params())


def test_no_reuse_across_database_files(db_file, tmp_path):
    other = tmp_path / "two.sqlite3"
    sqlite3.connect(other).execute("CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)").connection.close()
    try:
        first = open_and_close(db_file)
        second = open_and_close(other)
        assert second is not first
        assert pool.pool_size(key_of(db_file)) == 1
        assert pool.pool_size(key_of(other)) == 1
        # Different options are a different pool too (the busy timeout is part of the connection).
        third = open_and_close(db_file, timeout=7)
        assert third is not first
        assert open_and_close(db_file) is first
    finally:
        wrapper(other).close_pool()
        wrapper(db_file, timeout=7).close_pool()


def test_a_pooled_connection_to_a_replaced_file_is_dropped(db_file):
    first = open_and_close(db_file)
    os.remove(db_file)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(f"{db_file}{suffix}"):
            os.remove(f"{db_file}{suffix}")
    sqlite3.connect(db_file).execute("CREATE TABLE note (id INTEGER PRIMARY KEY, text TEXT)").connection.close()
    second = open_and_close(db_file)
    assert second is not first
    with pytest.raises(sqlite3.ProgrammingError):
        first.execute("SELECT 1")  # closed, not leaked


def test_the_pool_is_bounded(db_file):
    def hold_three():
        dbs = [wrapper(db_file, pool={"max_idle": 2}) for _ in range(3)]
        raws = []
        for db in dbs:
            db.ensure_connection()
            raws.append(db.connection)
        for db in dbs:
            db.close()
        return raws

    raws = in_thread(hold_three)
    assert len({id(raw) for raw in raws}) == 3
    assert pool.pool_size(key_of(db_file, pool={"max_idle": 2})) == 2
    with pytest.raises(sqlite3.ProgrammingError):
        raws[2].execute("SELECT 1")  # the one over the bound was really closed
    wrapper(db_file, pool={"max_idle": 2}).close_pool()


def test_close_pool_really_closes_the_idle_connections(db_file):
    raw = open_and_close(db_file)
    assert wrapper(db_file).close_pool() == 1
    assert pool.pool_size(key_of(db_file)) == 0
    with pytest.raises(sqlite3.ProgrammingError):
        raw.execute("SELECT 1")


def test_in_memory_databases_are_never_pooled(django_db_blocker):
    with django_db_blocker.unblock():
        db = wrapper(":memory:")
        db.ensure_connection()
        assert db._pool_key(db.get_connection_params()) is None
        db.close()  # Django ignores it: closing would destroy the database
        assert db.connection is not None
        db.connection.close()


def test_pooling_can_be_turned_off(db_file):
    raw = open_and_close(db_file, pool=False)
    with pytest.raises(sqlite3.ProgrammingError):
        raw.execute("SELECT 1")


def test_a_forked_child_never_reuses_or_closes_its_parents_connections(db_file):
    held = wrapper(db_file)  # a wrapper holding a connection while the process forks
    held.ensure_connection()
    held_raw = held.connection
    parent_raw = open_and_close(db_file)
    key = key_of(db_file)
    assert pool.pool_size(key) == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never return into pytest
        code = 1
        try:
            os.close(read)
            checks = [pool.pool_size() == 0]
            db = wrapper(db_file)
            with db.cursor() as cursor:
                cursor.execute("INSERT INTO note (text) VALUES ('from the child')")
            checks.append(db.connection is not parent_raw)
            db.close()
            checks.append(pool.pool_size(key) == 1)  # its own connection, pooled in the child
            held.close()  # the parent's connection: dropped, neither pooled nor closed
            checks.append(held_raw in pool._inherited and pool.pool_size(key) == 1)
            held_raw.execute("SELECT 1")  # still open (ProgrammingError if the child had closed it)
            os.write(write, "".join("1" if ok else "0" for ok in checks).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    report = os.read(read, 100).decode()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert report == "1111"
    # The parent's pooled connection is still open, still pooled, and sees the child's row.
    assert pool.pool_size(key) == 1
    assert parent_raw.execute("SELECT text FROM note").fetchall() == [("from the child",)]
    assert open_and_close(db_file) is parent_raw
    held.close()
    assert pool.pool_size(key) == 2  # the parent pools its own connection as usual


def test_the_test_database_pool_is_closed_when_its_file_is_destroyed(db_file):
    raw = open_and_close(db_file)
    creation = wrapper(db_file).creation
    creation._destroy_test_db(str(db_file), verbosity=0)  # removes the file, as at the end of a test session
    assert not db_file.exists()
    assert pool.pool_size(key_of(db_file)) == 0
    with pytest.raises(sqlite3.ProgrammingError):
        raw.execute("SELECT 1")


@pytest.mark.parametrize("database_url", [None, "sqlite:///{dir}/url.sqlite3"])
def test_the_app_uses_the_pooled_backend_for_sqlite(tmp_path, database_url):
    """The embedded default and a sqlite:// DATABASE_URL both get the pooled
    backend (settings read in a fresh process, whatever database this suite uses)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ELION_SQLITE_PATH")}
    env.update(ELION_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="elion.settings")
    if database_url:
        env["DATABASE_URL"] = database_url.format(dir=tmp_path)
    engine = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; print(settings.DATABASES['default']['ENGINE'])"],
        env=env, capture_output=True, text=True, check=True, cwd=settings.BASE_DIR,
    ).stdout.strip()
    assert engine == "elion.base.db.backends.sqlite3"
