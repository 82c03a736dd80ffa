"""Browser: a reply that created an artifact shows its card; Copy puts the Markdown on the clipboard and
Open shows the artifact's page, with no script or CSP error (issue 22, "Artifacts")."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from artifacts.models import Artifact
from tests.support.scripted_provider import ScriptedReply

pytestmark = pytest.mark.browser

COMPOSER = "[data-composer-input]"
POEM = "# Orchard\n\nThe crooked pear tree\nkeeps the gate of the hum."


def test_an_artifact_card_opens_and_copies(live_app, page: Page, scripted_server):
    scripted_server.script(
        ScriptedReply(tool_calls=[{"name": "create_artifact", "call_id": "call_card",
                                   "arguments": {"title": "Orchard Song", "kind": "poem", "content": POEM}}]),
        ScriptedReply(text="Here is the orchard poem."),
    )
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_app.url)
    page.goto(live_app.url)
    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    page.fill(COMPOSER, "Write me a poem about the orchard.")
    page.press(COMPOSER, "Enter")

    reply = page.locator(".message-assistant").last
    expect(reply).to_contain_text("Here is the orchard poem.")
    card = reply.locator("[data-artifact-card]")
    expect(card).to_have_count(1)
    expect(card.locator("[data-artifact-title]")).to_have_text("Orchard Song")
    expect(card.locator("[data-artifact-kind]")).to_have_text("Poem")
    artifact = Artifact.objects.get()
    expect(card.locator("[data-artifact-download]")).to_have_attribute(
        "href", f"/artifacts/{artifact.pk}/download/?version=1"
    )

    card.get_by_role("button", name="Copy").click()
    expect(card.locator("[data-artifact-copy]")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == POEM

    card.get_by_role("link", name="Open").click()
    page.wait_for_url(f"{live_app.url}/artifacts/{artifact.pk}/")
    expect(page.locator("[data-artifact-body] h1")).to_have_text("Orchard")
    expect(page.locator("[data-artifact-body]")).to_contain_text("keeps the gate of the hum.")
    page.get_by_role("link", name="Artifacts", exact=True).click()
    expect(page.locator("[data-artifact-list]")).to_contain_text("Orchard Song")
    assert page.js_errors == []
