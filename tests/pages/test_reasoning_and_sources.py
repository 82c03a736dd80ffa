"""Browser: a reply's reasoning summary streams into a collapsed "Thought for N s" line that expands, and
its citations show as numbered sources under it (issue "GPT-5.5 the way the Responses API means it")."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.support.scripted_provider import ScriptedReply

pytestmark = pytest.mark.browser

COMPOSER = "[data-composer-input]"
TEXT = "Bees dance to share directions. Hives vote on new homes."


def test_reasoning_summary_line_expands_and_citations_show_their_sources(live_app, page: Page, scripted_server):
    scripted_server.script(ScriptedReply(
        reasoning=["Weighing what AUMA asked about bees."],
        text=TEXT,
        delay_between_chunks=0.15,
        citations=[
            {"url": "https://example.org/bees/dance", "title": "The waggle dance", "start": 0, "end": 31},
            {"url": "javascript:alert(1)", "title": "Not a link", "start": 32, "end": 56},
            {"url": "https://example.net/swarm", "title": "Swarm decisions", "start": 32, "end": 56},
        ],
    ))
    page.goto(live_app.url)
    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    page.fill(COMPOSER, "How do bees decide?")
    page.press(COMPOSER, "Enter")

    live = page.locator(".message-assistant.status-streaming")
    expect(live.locator("[data-reasoning] summary")).to_have_text("Thinking…")
    expect(page.locator(".message-assistant.status-streaming")).to_have_count(0)

    reply = page.locator(".message-assistant").last
    expect(reply).to_contain_text("Hives vote on new homes.")
    line = reply.locator("details[data-reasoning]")
    expect(line.locator("summary")).to_have_text(re.compile(r"^Thought for \d+ s$"))
    summary = line.locator("[data-reasoning-summary]")
    expect(summary).to_be_hidden()  # collapsed until asked
    line.locator("summary").click()
    expect(summary).to_be_visible()
    expect(summary).to_contain_text("Weighing what AUMA asked about bees.")
    expect(reply.locator(".message-body")).not_to_contain_text("Weighing")  # never speech

    links = reply.locator("[data-sources] [data-source-link]")
    expect(links).to_have_count(2)
    expect(links.nth(0)).to_have_text("The waggle dance")
    expect(links.nth(0)).to_have_attribute("href", "https://example.org/bees/dance")
    expect(links.nth(1)).to_have_text("Swarm decisions")
    expect(reply.locator("[data-sources] li").nth(1)).to_have_attribute("value", "2")
    expect(reply).not_to_contain_text("Not a link")
    assert page.js_errors == []
