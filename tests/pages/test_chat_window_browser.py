"""The windowed chat page in a real browser (issue 18): a long thread opens at its newest
message, earlier messages load above as the owner scrolls up without moving what is on
screen, and a search result for an old message lands on it. Real Daphne, real chromium;
the `page` fixture fails the test on any Content-Security-Policy violation.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from conversations.web.page_selectors import PAGE_WINDOW, thread_token_estimate
from tests.support.chat_page import rewind_confirmed, seed_conversation, send, wait_settled
from tests.support.scripted_provider import ScriptedReply
from transcript.tree import live_branch

pytestmark = pytest.mark.browser

LENGTH = 500


def long_thread(marker_at: int | None = None):
    turns = []
    for i in range(LENGTH):
        if i == marker_at:
            turns.append(("user", "the word marigold, said long ago"))
        elif i % 2 == 0:
            turns.append(("user", f"question {i}"))
        else:
            turns.append(("assistant", f"answer {i}\n\nA second paragraph, so that a bubble has some height."))
    conversation, messages = seed_conversation(*turns, title="A long thread")
    return conversation, messages


def shown_ids(page: Page) -> list[str]:
    return page.eval_on_selector_all(".message[data-message-id]", "els => els.map(e => e.dataset.messageId)")


def first_visible(page: Page) -> dict:
    """The first bubble inside the scroller's view, and its offset from the scroller's top."""
    return page.evaluate(
        """() => {
          const list = document.querySelector('[data-messages]');
          const top = list.getBoundingClientRect().top;
          for (const el of list.querySelectorAll('.message[data-message-id]')) {
            const box = el.getBoundingClientRect();
            if (box.bottom > top) return { id: el.dataset.messageId, offset: box.top - top };
          }
          return null;
        }"""
    )


def test_a_long_thread_opens_at_the_newest_and_scrolling_up_loads_earlier_in_place(live_app, page: Page):
    conversation, messages = long_thread()
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    assert shown_ids(page) == [str(m.id) for m in messages[-PAGE_WINDOW:]]
    newest = page.locator(f"#message-{messages[-1].id}")
    expect(newest).to_be_in_viewport()
    # The header estimate still counts the whole live branch.
    expected = thread_token_estimate(live_branch(conversation))
    expect(page.locator("[data-estimate]")).to_have_attribute("data-value", str(expected))

    # Scroll up step by step, as the owner would, until earlier bubbles arrive above.
    page.locator("[data-messages]").evaluate("el => { el.scrollTop = 600; }")
    page.wait_for_timeout(100)
    page.locator("[data-messages]").evaluate("el => { el.scrollTop = 0; }")
    before = first_visible(page)
    page.wait_for_function(f"() => document.querySelectorAll('.message[data-message-id]').length >= {2 * PAGE_WINDOW}")
    page.wait_for_timeout(200)
    ids = shown_ids(page)
    branch = [str(m.id) for m in messages]
    assert ids == branch[-len(ids) :] and len(ids) >= 2 * PAGE_WINDOW
    # No jump: the bubble that was first on screen is still where it was.
    after = page.evaluate(
        """(id) => {
          const list = document.querySelector('[data-messages]');
          return document.getElementById('message-' + id).getBoundingClientRect().top - list.getBoundingClientRect().top;
        }""",
        before["id"],
    )
    assert abs(after - before["offset"]) <= 4, (before, after)
    expect(page.locator("[data-estimate]")).to_have_attribute("data-value", str(expected))

    # The accessible fallback: the button loads the next earlier window too.
    count = len(ids)
    page.locator("[data-messages]").evaluate("el => { el.scrollTop = 0; }")
    page.get_by_role("button", name="Load earlier messages").click()
    page.wait_for_function(f"() => document.querySelectorAll('.message[data-message-id]').length > {count}")
    assert page.js_errors == []


def test_a_search_result_for_an_old_message_lands_on_it(live_app, page: Page):
    conversation, messages = long_thread(marker_at=40)
    old = messages[40]
    page.goto(f"{live_app.url}/search/?q=marigold")
    page.get_by_role("link", name="Open").first.click()
    page.wait_for_url(re.compile(rf"/c/{conversation.id}/\?around={old.id}#message-{old.id}$"))
    target = page.locator(f"#message-{old.id}")
    expect(target).to_be_in_viewport()
    expect(target).to_contain_text("marigold")
    expect(page.get_by_role("link", name="Jump to latest")).to_be_visible()


def test_an_address_naming_a_message_outside_the_window_opens_a_window_around_it(live_app, page: Page):
    conversation, messages = long_thread()
    old = messages[7]
    page.goto(f"{live_app.url}/c/{conversation.id}/#message-{old.id}")
    page.wait_for_url(re.compile(rf"\?around={old.id}#message-{old.id}$"))
    expect(page.locator(f"#message-{old.id}")).to_be_in_viewport()


def test_sending_from_an_older_window_brings_the_newest_in_first(live_app, page: Page, scripted_server):
    conversation, messages = long_thread()
    scripted_server.script(ScriptedReply(text="A reply at the end."))
    page.goto(f"{live_app.url}/c/{conversation.id}/?start=1")
    expect(page.locator(f"#message-{messages[0].id}")).to_be_in_viewport()
    expect(page.get_by_role("link", name="Jump to latest")).to_be_visible()
    send(page, "A new turn")
    wait_settled(page)
    expect(page.locator(".message").last).to_contain_text("A reply at the end.")
    ids = shown_ids(page)
    assert ids[-4:-2] == [str(m.id) for m in messages[-2:]]
    expect(page.get_by_role("link", name="Jump to latest")).to_be_hidden()
    expect(page.locator(f"#message-{messages[0].id}")).to_have_count(0)


def test_rewinding_from_an_older_window_opens_the_newest_window_ending_there(live_app, page: Page):
    conversation, messages = long_thread()
    target, looked_at = messages[101], messages[121]
    page.goto(f"{live_app.url}/c/{conversation.id}/?around={looked_at.id}#message-{looked_at.id}")
    bubble = page.locator(f"#message-{target.id}")
    bubble.scroll_into_view_if_needed()
    rewind_confirmed(page, bubble)
    page.wait_for_url(f"{live_app.url}/c/{conversation.id}/")
    expect(page.locator(".message").last).to_have_attribute("data-message-id", str(target.id))
    expect(page.locator(f"#message-{looked_at.id}")).to_have_count(0)
