"""Browser journeys for provider-reported usage, against a real Daphne and the scripted provider:
the "Reported by the provider" block of Request size details fills in when a reply finishes,
without a reload, and Settings -> Usage totals the day's replies."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from playwright.sync_api import Page, expect

from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, Role

pytestmark = pytest.mark.browser

COMPOSER = "[data-composer-input]"


def send_and_settle(page: Page, text: str) -> None:
    page.fill(COMPOSER, text)
    page.press(COMPOSER, "Enter")
    expect(page.locator(".message-assistant")).not_to_have_count(0)
    expect(page.locator(".message.status-streaming")).to_have_count(0)
    expect(page.locator(COMPOSER)).to_be_enabled()


def test_request_size_details_show_the_providers_count_when_a_reply_finishes(live_app, page: Page, scripted_server):
    scripted_server.script(
        ScriptedReply(chunks=["Counted ", "for you."], usage={"input_tokens": 5_432, "output_tokens": 21,
                                                             "cached_tokens": 5_000, "reasoning_tokens": 9}),
        ScriptedReply(text="And again.", usage={"input_tokens": 6_001, "output_tokens": 7, "cached_tokens": 0,
                                                "reasoning_tokens": 2}),
    )
    page.goto(live_app.url)
    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    page.click("[data-estimate-button]")
    block = page.locator("[data-provider-usage]")
    expect(block).to_contain_text("Reported by the provider")
    expect(block).to_contain_text("No reply here has reported usage yet.")

    send_and_settle(page, "Count the tokens")
    reply = Message.objects.get(role=Role.ASSISTANT)
    expect(block).to_have_attribute("data-usage-message-id", str(reply.pk))
    expect(block.locator("[data-usage=input_tokens]")).to_have_text("5,432")
    expect(block.locator("[data-usage=cached_input_tokens]")).to_have_text("5,000")
    expect(block.locator("[data-usage=output_tokens]")).to_have_text("21")
    expect(block.locator("[data-usage=reasoning_tokens]")).to_have_text("9")
    # The app's estimates stay, above the provider's figures.
    panel = page.locator("[data-diagnostics-panel]")
    expect(panel).to_contain_text("App estimates")
    diagnostics = reply.metadata["diagnostics"]
    expect(panel.locator("[data-diag=total_input_tokens]")).to_have_text(f"{diagnostics['total_input_tokens']:,}")

    send_and_settle(page, "Once more")
    expect(block.locator("[data-usage=input_tokens]")).to_have_text("6,001")
    expect(block.locator("[data-usage=reasoning_tokens]")).to_have_text("2")
    assert page.js_errors == []

    # Settings -> Usage, from the navigation: today's two replies, totalled.
    page.locator(".sidebar-foot").get_by_role("link", name="Usage").click()
    page.wait_for_url(re.compile(r"/settings/usage/$"))
    today = dt.datetime.now(dt.UTC).date().isoformat()
    row = page.locator(f"[data-usage-days] [data-usage-period='{today}']")
    expect(row.locator("[data-usage=replies]")).to_have_text("2")
    expect(row.locator("[data-usage=input_tokens]")).to_have_text("11,433")
    expect(row.locator("[data-usage=cached_input_tokens]")).to_have_text("5,000")
    expect(row.locator("[data-usage=output_tokens]")).to_have_text("28")
    expect(row.locator("[data-usage=estimated_cost_usd]")).to_have_text("—")
    expect(page.locator("[data-usage-no-prices]")).to_contain_text("Set prices to estimate cost")
    assert page.js_errors == []
