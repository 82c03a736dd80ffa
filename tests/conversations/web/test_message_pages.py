"""The paged messages API: `GET …/messages/?limit=N[&before=<id>|&around=<id>]` (docs/api.md, issue 18).

A window is a slice of the live branch, oldest to newest, with `has_more_before`
/ `has_more_after`; without `limit` the answer is the whole live branch as
before paging existed. The window is read without walking the whole branch,
so the first page costs the same statements at any thread length.
"""

from __future__ import annotations

import uuid

import pytest
import yaml
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from conversations.services.threads.thread_writes import conversation_rewind
from conversations.web.message_paging import PAGE_LIMIT_MAX
from tests.support.factories import thread, turns_append
from transcript.models import Message, Role
from transcript.tree import live_branch

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return Client()


def pairs(count: int, start: int = 0) -> list[tuple[str, str]]:
    return [("user" if i % 2 == 0 else "assistant", f"message {i}") for i in range(start, start + count)]


def page(client: Client, conversation, **query) -> dict:
    response = client.get(f"/api/conversations/{conversation.id}/messages/", query)
    assert response.status_code == 200, response.content
    return response.json()


def ids(body: dict) -> list[str]:
    return [m["id"] for m in body["results"]]


def branched_thread():
    """A thread whose live branch skips a rewound-away stretch: 8 live messages, 4 off the branch."""
    conversation = thread(*pairs(4))
    fork_point = conversation.head
    turns_append(conversation, *pairs(4, start=100))  # abandoned by the rewind below
    conversation_rewind(conversation_id=conversation.id, message_id=fork_point.id)
    conversation.refresh_from_db()
    turns_append(conversation, *pairs(4, start=4))
    conversation.refresh_from_db()
    return conversation


def test_without_limit_the_answer_is_the_whole_live_branch_as_before(client):
    conversation = branched_thread()
    Message.objects.create(conversation=conversation, seq=500, role=Role.SYSTEM, content="stored prompt")
    body = page(client, conversation)
    assert set(body) == {"results"}
    assert ids(body) == [str(m.id) for m in live_branch(conversation)]
    assert [m["content"] for m in body["results"]] == [f"message {i}" for i in range(8)]


def test_newest_page_holds_the_last_limit_messages_oldest_first(client):
    conversation = thread(*pairs(7))
    branch = [str(m.id) for m in live_branch(conversation)]
    body = page(client, conversation, limit=3)
    assert ids(body) == branch[-3:]
    assert (body["has_more_before"], body["has_more_after"]) == (True, False)
    whole = page(client, conversation, limit=7)
    assert ids(whole) == branch and (whole["has_more_before"], whole["has_more_after"]) == (False, False)
    assert ids(page(client, conversation, limit=50)) == branch


def test_before_pages_back_to_the_root_along_the_live_branch_without_gap_or_overlap(client):
    conversation = branched_thread()
    collected: list[str] = []
    body = page(client, conversation, limit=3)
    collected[:0] = ids(body)
    while body["has_more_before"]:
        body = page(client, conversation, limit=3, before=collected[0])
        assert body["has_more_after"] is True  # the cursor itself lies after the window
        collected[:0] = ids(body)
    assert collected == [str(m.id) for m in live_branch(conversation)]
    assert not {m["content"] for m in body["results"]} & {f"message {i}" for i in range(100, 104)}


def test_before_the_root_is_an_empty_window(client):
    conversation = thread(*pairs(2))
    root = live_branch(conversation)[0]
    body = page(client, conversation, limit=5, before=str(root.id))
    assert body == {"results": [], "has_more_before": False, "has_more_after": True}


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 9, 11])
def test_around_centres_the_window_on_the_cursor_and_clamps_at_both_ends(client, limit):
    conversation = branched_thread()
    branch = [str(m.id) for m in live_branch(conversation)]
    width = min(limit, len(branch))
    for index, cursor in enumerate(branch):
        # The window slides over the branch: the cursor sits at its middle (the
        # earlier side takes the odd place), pushed inwards at the root and the head.
        start = max(0, min(index - limit // 2, len(branch) - width))
        body = page(client, conversation, limit=limit, around=cursor)
        assert ids(body) == branch[start:start + width], (limit, index)
        assert body["has_more_before"] == (start > 0)
        assert body["has_more_after"] == (start + width < len(branch))


def test_a_cursor_off_the_live_branch_or_from_another_conversation_is_404(client):
    conversation = branched_thread()
    abandoned = Message.objects.get(conversation=conversation, content="message 101")
    system = Message.objects.create(conversation=conversation, seq=500, role=Role.SYSTEM, content="stored prompt")
    other = thread(*pairs(2))
    for cursor in (abandoned.id, system.id, other.head_id, uuid.uuid4()):
        for name in ("before", "around"):
            response = client.get(f"/api/conversations/{conversation.id}/messages/", {"limit": 5, name: str(cursor)})
            assert response.status_code == 404, (name, cursor)
            assert response.json()["error"] == "message_not_found"


@pytest.mark.parametrize(
    "query",
    [{"limit": 5, "before": "not-a-uuid"}, {"limit": 5, "around": ""}, {"before": "12"},
     {"limit": 5, "before": str(uuid.uuid4()), "around": str(uuid.uuid4())}],
)
def test_a_bad_cursor_is_400_invalid_cursor(client, query):
    conversation = thread(*pairs(2))
    response = client.get(f"/api/conversations/{conversation.id}/messages/", query)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_cursor"


@pytest.mark.parametrize("limit", ["0", str(PAGE_LIMIT_MAX + 1), "-1", "1.5", "ten", "", " 5", "٣", "9" * 40])
def test_a_limit_outside_1_to_the_maximum_is_400_invalid_limit(client, limit):
    conversation = thread(*pairs(2))
    response = client.get(f"/api/conversations/{conversation.id}/messages/", {"limit": limit})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_limit"


def test_a_cursor_without_limit_is_400_invalid_limit(client):
    conversation = thread(*pairs(2))
    response = client.get(f"/api/conversations/{conversation.id}/messages/", {"around": str(conversation.head_id)})
    assert response.status_code == 400 and response.json()["error"] == "invalid_limit"


def test_the_largest_limit_is_accepted(client):
    conversation = thread(*pairs(3))
    assert len(page(client, conversation, limit=PAGE_LIMIT_MAX)["results"]) == 3


def test_an_empty_conversation_pages_as_an_empty_window(client):
    conversation = thread()
    assert page(client, conversation, limit=10) == {"results": [], "has_more_before": False, "has_more_after": False}


def statements_for(client: Client, conversation, **query) -> tuple[int, dict]:
    with CaptureQueriesContext(connection) as queries:
        body = page(client, conversation, **query)
    return len(queries), body


def test_a_page_costs_the_same_statements_and_rows_at_10_and_2000_messages(client):
    short, long = thread(*pairs(10)), thread(*pairs(2_000))
    for conversation in (short, long):
        conversation.refresh_from_db()
    short_branch, long_branch = live_branch(short), live_branch(long)
    cases = [
        ({"limit": 5}, {"limit": 5}),
        ({"limit": 5, "before": str(short_branch[-3].id)}, {"limit": 5, "before": str(long_branch[-3].id)}),
        ({"limit": 5, "around": str(short_branch[4].id)}, {"limit": 5, "around": str(long_branch[1_000].id)}),
    ]
    page(client, short)  # the first request of a process also syncs the owner row: not the page's cost
    for short_query, long_query in cases:
        short_count, short_body = statements_for(client, short, **short_query)
        long_count, long_body = statements_for(client, long, **long_query)
        assert long_count == short_count, (long_query, short_count, long_count)
        assert len(long_body["results"]) == len(short_body["results"]) == 5
    # The first page reads only the window's rows: no statement returns more than the window.
    with CaptureQueriesContext(connection) as queries:
        body = page(client, long, limit=5)
    assert ids(body) == [str(m.id) for m in long_branch[-5:]]
    rows_read = 0
    for query in queries.captured_queries:
        with connection.cursor() as cursor:
            sql = query["sql"]
            if sql.lstrip().upper().startswith(("SELECT", "WITH")) and "%s" not in sql:
                cursor.execute(sql)
                rows_read = max(rows_read, len(cursor.fetchall()))
    assert rows_read <= 6  # the window, and the head walk's one extra step to see whether more lie before


def test_the_api_schema_describes_the_page_parameters_and_shape(client):
    schema = yaml.safe_load(client.get("/api/schema/").content)
    listing = schema["paths"]["/api/conversations/{conversation_id}/messages/"]["get"]
    assert {p["name"] for p in listing["parameters"]} == {"conversation_id", "limit", "before", "around"}
    limit = next(p for p in listing["parameters"] if p["name"] == "limit")
    assert limit["schema"]["maximum"] == PAGE_LIMIT_MAX
    assert set(listing["responses"]) == {"200", "400", "404"}
    page_shape = schema["components"]["schemas"]["MessagePage"]
    assert set(page_shape["properties"]) == {"results", "has_more_before", "has_more_after"}
    assert page_shape["properties"]["results"]["items"]["$ref"].rsplit("/", 1)[-1] in schema["components"]["schemas"]
