"""The windowed chat page (issue 18): `/c/<id>/` renders a window of the live branch, never the whole thread.

The newest PAGE_WINDOW messages by default, `?around=<id>` a window around one
message, `?start=1` the first ones; `/c/<id>/window/` answers the bubbles of an
earlier window (or the newest) for chat.js. The header estimate still covers
the whole live branch: the page says how many tokens lie outside its window.
"""

from __future__ import annotations

import re
import uuid

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from conversations.services.threads.thread_writes import conversation_rewind
from conversations.web.page_selectors import PAGE_WINDOW, thread_token_estimate
from tests.support.factories import thread, turns_append
from transcript.tree import live_branch

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def keyed(settings):
    settings.OPENAI_API_KEY = "test-key"


@pytest.fixture
def client():
    return Client()


def pairs(count: int, start: int = 0, reply: str = "") -> list[tuple[str, str]]:
    return [
        ("user", f"question {i}") if i % 2 == 0 else ("assistant", f"answer {i} {reply}")
        for i in range(start, start + count)
    ]


def bubble_ids(html: str) -> list[str]:
    return re.findall(r'<article class="message[^"]*"\s+id="message-([0-9a-f-]+)"', html)


def branch_ids(conversation) -> list[str]:
    return [str(m.id) for m in live_branch(conversation)]


def attribute(html: str, name: str) -> str:
    found = re.search(rf'{name}="([^"]*)"', html)
    assert found, name
    return found.group(1)


def get_page(client: Client, path: str, status: int = 200, **query) -> str:
    response = client.get(path, query)
    assert response.status_code == status, (response.status_code, response.content[:300])
    return response.content.decode()


def control_hidden(html: str, marker: str) -> bool:
    tag = re.search(rf"<[a-z]+ [^>]*{marker}[^>]*>", html)
    assert tag, marker
    return " hidden" in tag.group(0)


def test_the_page_renders_the_newest_window_and_offers_earlier_messages(client):
    conversation = thread(*pairs(120))
    html = get_page(client, f"/c/{conversation.id}/")
    assert bubble_ids(html) == branch_ids(conversation)[-PAGE_WINDOW:]
    assert attribute(html, "data-has-more-before") == "true"
    assert attribute(html, "data-has-more-after") == "false"
    assert not control_hidden(html, "data-window-earlier")
    assert control_hidden(html, "data-window-later")


def test_a_short_thread_renders_whole_without_window_controls(client):
    conversation = thread(*pairs(10))
    html = get_page(client, f"/c/{conversation.id}/")
    assert bubble_ids(html) == branch_ids(conversation)
    assert control_hidden(html, "data-window-earlier") and control_hidden(html, "data-window-later")


def test_around_renders_a_window_centred_on_the_message_with_jump_to_latest(client):
    conversation = thread(*pairs(200))
    branch = branch_ids(conversation)
    html = get_page(client, f"/c/{conversation.id}/", around=branch[60])
    shown = bubble_ids(html)
    assert len(shown) == PAGE_WINDOW and branch[60] in shown
    assert shown == branch[branch.index(shown[0]) : branch.index(shown[0]) + PAGE_WINDOW]
    assert attribute(html, "data-anchor-id") == branch[60]
    assert (attribute(html, "data-has-more-before"), attribute(html, "data-has-more-after")) == ("true", "true")
    assert not control_hidden(html, "data-window-later")


def test_start_renders_the_first_window(client):
    conversation = thread(*pairs(120))
    html = get_page(client, f"/c/{conversation.id}/", start="1")
    assert bubble_ids(html) == branch_ids(conversation)[:PAGE_WINDOW]
    assert attribute(html, "data-has-more-before") == "false"
    assert attribute(html, "data-at-start") == "true"
    assert not control_hidden(html, "data-window-later")


def test_around_refuses_a_malformed_id_and_a_message_off_the_live_branch_or_elsewhere(client):
    conversation = thread(*pairs(6))
    keep = live_branch(conversation)[3]
    (gone,) = turns_append(conversation, ("user", "rewound away"))
    conversation_rewind(conversation_id=conversation.id, message_id=keep.id)
    other = thread(*pairs(2))
    path = f"/c/{conversation.id}/"
    assert "around must be the id of a message" in get_page(client, path, 400, around="not-a-uuid")
    get_page(client, path, 404, around=str(gone.id))
    get_page(client, path, 404, around=str(other.head_id))
    get_page(client, path, 404, around=str(uuid.uuid4()))


def test_the_window_route_answers_the_earlier_bubbles_and_their_edges(client):
    conversation = thread(*pairs(120))
    branch = branch_ids(conversation)
    first_shown = branch[-PAGE_WINDOW]
    html = get_page(client, f"/c/{conversation.id}/window/", before=first_shown, limit=str(PAGE_WINDOW))
    assert bubble_ids(html) == branch[-2 * PAGE_WINDOW : -PAGE_WINDOW]
    assert attribute(html, "data-has-more-before") == "true"
    last = get_page(client, f"/c/{conversation.id}/window/", before=branch[-2 * PAGE_WINDOW], limit=str(PAGE_WINDOW))
    assert bubble_ids(last) == branch[: -2 * PAGE_WINDOW]
    assert attribute(last, "data-has-more-before") == "false"
    # Without a cursor: the newest window, as the page renders it ("Jump to latest" before a send).
    newest = get_page(client, f"/c/{conversation.id}/window/")
    assert bubble_ids(newest) == branch[-PAGE_WINDOW:]
    assert attribute(newest, "data-has-more-after") == "false"


def test_the_window_route_refuses_bad_cursors_and_limits(client):
    conversation = thread(*pairs(6))
    other = thread(*pairs(2))
    path = f"/c/{conversation.id}/window/"
    get_page(client, path, 400, before="nope", limit="5")
    get_page(client, path, 400, before=str(live_branch(conversation)[3].id), limit="0")
    get_page(client, path, 400, before=str(live_branch(conversation)[3].id))
    get_page(client, path, 404, before=str(other.head_id), limit="5")
    get_page(client, f"/c/{uuid.uuid4()}/window/", 404)


def test_the_estimate_is_the_whole_branch_and_the_page_says_what_lies_outside_its_window(client):
    conversation = thread(*pairs(130, reply="x" * 37))
    expected = thread_token_estimate(live_branch(conversation))
    for query in ({}, {"around": branch_ids(conversation)[40]}, {"start": "1"}):
        html = get_page(client, f"/c/{conversation.id}/", **query)
        assert int(attribute(html, "data-token-estimate")) == expected
        rendered = sum(int(n) for n in re.findall(r'<article [^>]*data-tokens="(\d+)"', html.split("<template")[0]))
        assert 0 < rendered < expected
        assert int(attribute(html, "data-tokens-outside")) + rendered == expected
    # The window route says the same of the bubbles it answers (chat.js subtracts what it inserts).
    for query in ({"before": branch_ids(conversation)[-PAGE_WINDOW], "limit": "50"}, {}):
        fragment = get_page(client, f"/c/{conversation.id}/window/", **query)
        loaded = sum(int(n) for n in re.findall(r'<article [^>]*data-tokens="(\d+)"', fragment))
        assert int(attribute(fragment, "data-tokens-outside")) + loaded == expected


def page_statements(client: Client, conversation) -> int:
    with CaptureQueriesContext(connection) as queries:
        get_page(client, f"/c/{conversation.id}/")
    return len(queries)


def test_the_page_costs_the_same_statements_at_10_and_2000_messages_and_stays_small(client):
    short, long = thread(*pairs(10, reply="r" * 1_500)), thread(*pairs(2_000, reply="r" * 1_500))
    get_page(client, f"/c/{short.id}/")  # the first request of a process also syncs the owner row
    assert page_statements(client, long) == page_statements(client, short)
    html = get_page(client, f"/c/{long.id}/")
    assert len(bubble_ids(html)) == PAGE_WINDOW
    assert len(html.encode()) < 200_000
    # The whole branch's text alone would be far beyond that: the window is what keeps it small.
    assert sum(len(m.content) for m in live_branch(long)) > 1_000_000


def test_a_search_result_links_to_a_window_around_its_message(client):
    conversation = thread(*pairs(120))
    turns_append(conversation, ("user", "the word marigold, long ago"), *pairs(118))
    old = next(m for m in live_branch(conversation) if "marigold" in m.content)
    html = get_page(client, "/search/", q="marigold")
    link = f"/c/{conversation.id}/?around={old.id}#message-{old.id}"
    assert link in html
    # The link lands on a page that holds the message, though it is far from the newest.
    target = get_page(client, f"/c/{conversation.id}/", around=str(old.id))
    assert str(old.id) in bubble_ids(target)
    assert str(old.id) not in bubble_ids(get_page(client, f"/c/{conversation.id}/"))
