"""Every read of a conversation's handoff bubbles does the same work at any thread length (issue 40).

A handoff bubble is one row of a thread (Branch / Fresh Chat, an archived conversation continued), found by
the partial index `message_conversation_handoff`. Read in seq order, SQLite without planner statistics (as
the app runs: it never runs `ANALYZE`) walked the whole thread along (conversation, seq) instead: 34.6 ms a
read at 100,000 messages. Each reader is measured here, statement by statement
(`tests/support/statement_work.py`), at 120 and 2,000 messages; the inventory below names every function
of the app that filters messages by that kind, so a new reader is measured or says why not.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from continuity.models import ThreadHandoff
from continuity.rules.archive_handoff_store import archive_handoff_blocks_for
from continuity.rules.thread_handoff_store import thread_handoff_source_ids
from continuity.services.selectors import handoff_provenances
from elion.base.assistant_settings import assistant_settings_read
from tests.support.factories import thread
from tests.support.statement_work import SLACK, assert_same_work, read_statements_work, statistics_as_deployed
from transcript.models import Message, MessageKind

ROOT = Path(__file__).resolve().parents[2]

READERS: dict[str, Callable] = {
    "archive_handoff_blocks_for": lambda c: archive_handoff_blocks_for([c.pk], settings_row=assistant_settings_read()),
    "thread_handoff_source_ids": thread_handoff_source_ids,
    "handoff_provenances": lambda c: handoff_provenances([c.pk]),
}
# Readers measured elsewhere, or that never run per request.
MEASURED_ELSEWHERE = {
    "send_context_load": "a send's one read under its lock: tests/conversations/sending/test_send_work.py",
    "historical_branch_seeds": "the one-time upgrade marking of branches; an `Exists` subquery, which drops ordering",
    "legacy_conversation_ids": "the provider binding command's scan of every conversation, excluding bubbles",
    "handoff_destination_create": "writes a bubble, reads none",
}


def pairs(count: int) -> list[tuple[str, str]]:
    return [("user", f"question {i}") if i % 2 == 0 else ("assistant", f"answer {i} " + "r" * 300) for i in range(count)]


def with_handoff_bubble(count: int):
    """A thread of `count` messages whose first is an archived conversation's handoff bubble (and no handoff
    row, so `handoff_provenances` looks among its bubbles)."""
    conversation = thread(*pairs(count))
    ThreadHandoff.objects.filter(destination=conversation).delete()
    first = Message.objects.filter(conversation=conversation).exclude(role="system").order_by("seq").first()
    Message.objects.filter(pk=first.pk).update(
        kind=MessageKind.HANDOFF_ARTIFACT, metadata={"source_document_id": 1, "source_turns": [0]}
    )
    return conversation


def reader_work(read: Callable, conversation) -> list[tuple[str, int]]:
    with CaptureQueriesContext(connection) as queries:
        read(conversation)
    return read_statements_work(queries.captured_queries)


@pytest.mark.django_db
@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_handoff_bubble_read_does_the_same_work_at_120_and_2000_messages(reader):
    read = READERS[reader]
    short = with_handoff_bubble(120)
    statistics_as_deployed()
    read(short)  # the settings row, read once a process
    short_work = reader_work(read, short)
    assert short_work, "the reader ran no read statement"
    long = with_handoff_bubble(2_000)
    statistics_as_deployed()
    assert_same_work(short_work, reader_work(read, long), SLACK[connection.vendor])


def handoff_bubble_filters() -> set[str]:
    """Every function of the app that passes `kind=MessageKind.HANDOFF_ARTIFACT` to a call."""
    found = set()
    for path in ROOT.rglob("*.py"):
        relative = path.relative_to(ROOT)
        if relative.parts[0] in {".venv", "tests", "bench", "scripts"} or "migrations" in relative.parts:
            continue
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for call in ast.walk(function):
                if isinstance(call, ast.Call) and any(
                    keyword.arg == "kind" and isinstance(keyword.value, ast.Attribute)
                    and keyword.value.attr == "HANDOFF_ARTIFACT"
                    for keyword in call.keywords
                ):
                    found.add(function.name)
    return found


def test_every_handoff_bubble_reader_is_measured():
    assert handoff_bubble_filters() == set(READERS) | set(MEASURED_ELSEWHERE)
