"""Trimming visible in the browser: the divider where Elion's view begins, and the header's warning.

The thread is driven past a small input budget by real sends in this process (its settings are the
test's), then opened in a real browser against Daphne; a send from the page (Daphne keeps the default
budget, so it trims nothing) then moves the divider away without a reload.
"""

from __future__ import annotations

import re
import threading
from decimal import Decimal

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from tests.support.budget_threads import sends_until_trimmed
from transcript.models import Message

pytestmark = pytest.mark.browser

COMPOSER = "[data-composer-input]"


def in_a_thread(work):
    """Run `work` off this thread: the browser's event loop is registered here, and the test client's
    async views would refuse to run under it."""
    result: dict = {}

    def run() -> None:
        try:
            result["value"] = work()
        except BaseException as exc:  # re-raised below, in the test's thread
            result["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(timeout=300)
    if "error" in result:
        raise result["error"]
    return result["value"]


def trimmed_thread(scripted_server) -> str:
    created = Client().post("/api/conversations/", {"persona": "elion"}, content_type="application/json").json()
    sends_until_trimmed(scripted_server, created["id"])
    return created["id"]


def test_in_view_divider_marks_where_elions_view_begins(live_app, page: Page, scripted_server, settings):
    settings.ELION_INPUT_BUDGET_TOKENS = 4_000
    settings.ELION_TRIM_STEP = Decimal("0.1")
    conversation_id = in_a_thread(lambda: trimmed_thread(scripted_server))
    in_view = Client().get(f"/api/conversations/{conversation_id}/").json()["in_view"]
    assert in_view["out_of_view"] > 0

    page.goto(f"{live_app.url}/c/{conversation_id}/")
    divider = page.locator("[data-in-view-divider]")
    expect(divider).to_have_count(1)
    expect(divider).to_contain_text("Elion doesn't see the messages above this line.")
    expect(divider).to_contain_text(f"the oldest {in_view['out_of_view']} messages")
    # The divider sits right above the first message the last request carried.
    below = page.locator("[data-in-view-divider] + .message")
    expect(below).to_have_attribute("data-message-id", in_view["first_message_id"])
    expect(below).to_have_attribute("data-role", "user")
    divider.get_by_role("link", name="Request size details").click()
    expect(page.locator("[data-diagnostics-panel]")).to_be_visible()
    expect(page.locator("[data-diag=trimmed_messages]")).not_to_have_text("0")
    page.locator("[data-diagnostics-close]").click()

    # The header warns before the next send trims: the last request, its reply and the draft pass the budget.
    latest = Message.objects.filter(conversation_id=conversation_id, role="assistant").order_by("-seq").first()
    diagnostics = latest.metadata["diagnostics"]
    reply_tokens = -(-len(latest.content) // 4)
    pill = page.locator("[data-estimate-button]")
    already = diagnostics["total_input_tokens"] + reply_tokens > diagnostics["input_budget_tokens"]
    expect(pill).to_have_attribute("data-trims-next", "true" if already else "false")
    room = diagnostics["input_budget_tokens"] - diagnostics["total_input_tokens"] - reply_tokens
    page.fill(COMPOSER, "x" * (4 * max(room, 0) + 40))
    expect(pill).to_have_attribute("data-trims-next", "true")
    expect(pill).to_have_class(re.compile(r"\bestimate-trims\b"))
    expect(page.locator("[data-trim-warning]")).to_be_visible()
    expect(pill).to_have_attribute("title", re.compile("Elion will no longer see the oldest messages"))

    # A send from the page (Daphne's budget is the default: nothing trimmed) takes the divider away.
    page.fill(COMPOSER, "A short note.")
    page.press(COMPOSER, "Enter")
    expect(page.locator(".message.status-streaming")).to_have_count(0)
    expect(page.locator(".message-user", has_text="A short note.")).to_have_count(1)
    expect(divider).to_have_count(0)
    expect(pill).to_have_attribute("data-trims-next", "false")
    assert Client().get(f"/api/conversations/{conversation_id}/").json()["in_view"] == {
        "first_message_id": None, "out_of_view": 0,
    }
    assert page.js_errors == []
