"""Shared fixtures: the scripted provider, settings pointing at it, factories, SSE parsing."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("ELION_TESTING", "1")
from tests.support.scripted_provider import ScriptedProvider, ScriptedReply  # noqa: E402
from tests.support.shards import database_name, recorded_seconds, recorder_register, shard_of  # noqa: E402

# Fixtures kept in tests/support/: `redis_server` (a real redis-server on loopback), `run_queued`
# (a queued import job run in this process), `pieces_dir` (where uploads in pieces wait); `table_reset`
# (a committing test ends with every table emptied by DELETE, not by a flush: docs/testing.md);
# `broken_connection` (a connection a timed-out test left mid-statement is dropped before the next test);
# `push_service` (a Web Push service on loopback that decrypts what it receives).
pytest_plugins = [
    "tests.support.redis_server", "tests.support.import_jobs", "tests.support.upload_pieces", "tests.support.table_reset",
    "tests.support.broken_connection", "tests.support.push_fixture",
]

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


# Fixtures that start a session-wide Daphne or chromium. Tests using them run last, together:
# each server and the browser start once per session, and the browser's event loop (and
# the ORM async guard it lifts) never overlaps the rest of the suite.
LIVE_FIXTURES = frozenset({"_daphne_with_scripted_provider", "_offline_protected_daphne", "browser"})


# The tiers (docs/testing.md): a test that drives chromium is `browser`; one that starts a server
# process (Daphne, redis-server) or a second migrated database is `slow`. Marked here from the
# fixtures it uses, so a new test lands in its tier without remembering to; modules mark what
# fixtures cannot tell (`fuzz`, other subprocesses, data of tens of megabytes) themselves.
BROWSER_FIXTURES = frozenset({"browser"})
SERVER_FIXTURES = frozenset({"_daphne_with_scripted_provider", "_offline_protected_daphne", "redis_server",
                             "fresh_instance"})  # a second database, migrated, for restores


DATABASE_FIXTURES = frozenset({"db", "transactional_db", "django_db_setup"})


def pytest_configure(config):
    # ELION_TEST_DURATIONS_DIR: record each module's seconds (tests/support/shards.py).
    recorder_register(config)


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if used & SERVER_FIXTURES:
            item.add_marker(pytest.mark.slow)
        # pytest-django refuses database access to a test without a database marker or fixture, and a test
        # that starts no process (`slow`) reaches no database another way: which one is configured cannot
        # change what it proves.
        if (
            item.get_closest_marker("django_db") is None
            and not used & DATABASE_FIXTURES
            and item.get_closest_marker("slow") is None
            and item.get_closest_marker("browser") is None
        ):
            item.add_marker(pytest.mark.nodb)
    if shard := os.environ.get("ELION_TEST_SHARD"):
        # Deal the shares over the tests -m keeps (pytest's own selection, applied now, after the markers
        # above; applying it again later changes nothing).
        from _pytest.mark import deselect_by_mark

        deselect_by_mark(items, config)
        items[:], deselected = shard_of(items, shard, recorded_seconds(database_name()))
        config.hook.pytest_deselected(items=deselected)
    items.sort(key=lambda item: bool(LIVE_FIXTURES.intersection(getattr(item, "fixturenames", ()))))


@pytest.fixture(scope="session")
def scripted_server():
    with ScriptedProvider() as provider:
        yield provider


@pytest.fixture
def scripted_provider(scripted_server, settings):
    """The scripted OpenAI-compatible server, configured as the app's provider."""
    scripted_server.clear()
    settings.OPENAI_API_KEY = "test-key"
    settings.OPENAI_BASE_URL = scripted_server.base_url
    settings.ELION_API_SELECTOR = "responses"
    settings.ELION_MODEL = "gpt-5.5"
    settings.ELION_PROVIDER_ID = "openai"
    yield scripted_server
    scripted_server.release()
    scripted_server.clear()


@pytest.fixture
def reply():
    return ScriptedReply


def parse_sse(raw: bytes | str) -> list[tuple[str, dict]]:
    """`event:`/`data:` frames into (name, data) pairs, in order."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    events = []
    for frame in text.split("\n\n"):
        name, data = None, None
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
        if name is not None:
            events.append((name, data))
    return events


async def read_streaming(response) -> bytes:
    chunks = []
    async for chunk in response.streaming_content:
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture
def make_conversation(db):
    from conversations.services.threads.thread_writes import conversation_create

    def make(**kwargs):
        return conversation_create(**kwargs)

    return make


@pytest.fixture
def make_turns(db):
    """Append a straight chain of completed turns to a conversation (bypassing the provider).

    Rows carry the configured provider's binding, as every durable message does;
    `binding={}` makes legacy (unbound) rows.
    """
    from tests.support.factories import CONFIGURED, HEAD, turns_append

    def make(conversation, *pairs, parent=None, binding=None):
        return turns_append(
            conversation, *pairs, parent=HEAD if parent is None else parent,
            binding=CONFIGURED if binding is None else binding,
        )

    return make
