"""The indexing after a reply that times out (issue 41, item 18): one log line, not two tracebacks, and the
rows it left pending are indexed by the minute's job (`conversations.tasks.index_pending_messages`, scheduled
by migration 0025), as the reconciliation jobs retry theirs.

The timeout is the database's own error, raised where the indexing runs: on PostgreSQL a statement
cancelled by `statement_timeout` for real (produced before the send: see `timing_out_index_raising`); on
SQLite the `database is locked` its driver raises once the busy timeout runs out (20 s, too long to wait
out in a test).
"""

from __future__ import annotations

import logging

import pytest
from django.db import OperationalError, connection, transaction
from django_q.models import Schedule

from conversations import tasks
from conversations.sending import run
from tests.support.factories import sent_and_answered, thread, wait_until
from tests.support.scripted_provider import ScriptedReply
from transcript.models import MessageSearchEntry

pytestmark = pytest.mark.django_db(transaction=True)


def database_timeout() -> OperationalError:
    """The database's own timeout error: on PostgreSQL a statement really cancelled by `statement_timeout`
    (QueryCanceled, which Django raises as an OperationalError); on SQLite the driver's `database is locked`."""
    if connection.vendor == "postgresql":
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL statement_timeout = 50")
                cursor.execute("SELECT pg_sleep(2)")
        except OperationalError as cancelled:
            return cancelled
        raise AssertionError("statement_timeout did not cancel the statement")
    return OperationalError("database is locked")


def timing_out_index_raising(error: OperationalError):
    """The indexing after a reply, failing at once with `error`. At once: the test client ends the request's
    event loop after the response, and with it a reply task still waiting on a slow statement (Daphne keeps
    it running), so the timeout is produced before the send and raised where the indexing runs."""

    def timing_out_index(**kwargs: object) -> int:
        raise error

    return timing_out_index


def test_an_index_timeout_after_a_reply_logs_one_line_and_the_minute_job_indexes_it(
        scripted_provider, monkeypatch, caplog):
    monkeypatch.setattr(run, "message_search_index_sync", timing_out_index_raising(database_timeout()))
    scripted_provider.script(ScriptedReply(text="A reply about tomatoes."))
    conversation = thread()
    with caplog.at_level(logging.INFO):
        body = sent_and_answered(conversation, "Tell me about tomatoes")
        # The indexing runs after `done` is sent.
        wait_until(lambda: [r for r in caplog.records if "indexing after reply" in r.getMessage()])
    assert body["assistant_message"]["status"] == "complete"
    about_indexing = [r for r in caplog.records if "indexing after reply" in r.getMessage()]
    assert len(about_indexing) == 1, [r.getMessage() for r in about_indexing]
    line = about_indexing[0]
    assert line.levelno == logging.WARNING and line.exc_info is None
    assert "timed out" in line.getMessage() and "retries it" in line.getMessage()
    assert not [r for r in caplog.records if r.exc_info is not None]
    assert MessageSearchEntry.objects.filter(conversation=conversation, search_text__isnull=True).count() == 2

    assert tasks.index_pending_messages() >= 2
    assert not MessageSearchEntry.objects.filter(search_text__isnull=True).exists()
    assert tasks.index_pending_messages() == 0


@pytest.mark.django_db  # the migrated rows as they are (a transactional test's reset empties the table)
def test_the_index_job_is_scheduled_every_minute():
    schedule = Schedule.objects.get(func="conversations.tasks.index_pending_messages")
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == (Schedule.MINUTES, 1, -1)


def test_any_other_failure_of_the_indexing_still_logs_its_traceback(scripted_provider, monkeypatch, caplog):
    def broken(**kwargs: object) -> int:
        raise ValueError("a bug, not a timeout")

    monkeypatch.setattr(run, "message_search_index_sync", broken)
    scripted_provider.script(ScriptedReply(text="Fine."))
    with caplog.at_level(logging.INFO):
        sent_and_answered(thread(), "Hello")
        wait_until(lambda: [r for r in caplog.records if "indexing after reply" in r.getMessage()])
    failures = [r for r in caplog.records if "indexing after reply" in r.getMessage()]
    assert len(failures) == 1 and failures[0].levelno == logging.ERROR and failures[0].exc_info is not None
