"""Titles as a new user meets them (issue 41, item 8), desktop and phone:
- Archive "Continue in a new chat" gives a chat titled after the document, whose bubble says it is an archive
  handoff (it was "New chat", labelled "Branch / Fresh Chat handoff");
- Branch and Fork number their copies ("Rewind test one. (2)", "(3)", "(4)"), so the sidebar tells them apart
  (it showed "Rewind test one." four times);
- a first message with a code block is titled by its heading, and without a heading by its words, never its code.
"""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from archive.services.documents import archive_document_add_text
from tests.support.chat_page import COMPOSER, SIZES, seed_conversation, wait_settled
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation

pytestmark = pytest.mark.browser


def open_sidebar(page: Page) -> None:
    if page.locator("[data-sidebar-open]").is_visible():
        page.locator("[data-sidebar-open]").click()


@pytest.mark.parametrize("size", SIZES)
def test_copies_are_numbered_and_an_archive_continuation_is_titled_after_its_document(live_app, page: Page, size):
    page.set_viewport_size(SIZES[size])
    source, turns = seed_conversation(("user", "Rewind here."), ("assistant", "Rewound."), title="Rewind test one.")
    api = f"{live_app.url}/api/conversations/{source.id}"
    made = [
        httpx.post(f"{api}/branch/", headers={"Idempotency-Key": "b1"}, timeout=30).json()["title"],
        httpx.post(f"{api}/fork/", json={"message_id": str(turns[-1].id)}, headers={"Idempotency-Key": "f1"},
                   timeout=30).json()["title"],
    ]
    page.goto(f"{live_app.url}/c/{source.id}/")
    page.locator("[data-conversation-menu] summary").click()
    page.locator("[data-conversation-menu] [data-branch-button]").first.click()
    page.wait_for_url(lambda url: str(source.id) not in url)
    expect(page.locator("[data-title-button]")).to_have_text("Rewind test one. (4)")
    expect(page.locator("[data-origin-badge]")).to_have_text("Branch")
    assert made == ["Rewind test one. (2)", "Rewind test one. (3)"]
    open_sidebar(page)
    titles = page.locator(".sidebar [data-conversation-link] .conversation-title").all_inner_texts()
    family = sorted(title for title in titles if title.startswith("Rewind test one."))
    assert family == ["Rewind test one.", "Rewind test one. (2)", "Rewind test one. (3)", "Rewind test one. (4)"]

    text = "AUMA said:\nWhere did the heron nest?\n\nElion Voicefire said:\nBy the old mill.\n"
    document = archive_document_add_text(text=text, collection="conversations", title="Heron watch").document
    for expected in ("Heron watch", "Heron watch (2)"):
        page.goto(f"{live_app.url}/archive/{document.pk}/")
        page.locator("[data-continue-document]").click()
        page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
        expect(page.locator("[data-title-button]")).to_have_text(expected)
        expect(page).to_have_title(re.compile(rf"^{re.escape(expected)} ·"))
        expect(page.locator("[data-origin-badge]")).to_have_text("Imported")
        expect(page.locator(".message-handoff [data-handoff-label]")).to_have_text("Archive handoff")
    assert Conversation.objects.filter(title__startswith="Heron watch").count() == 2
    assert page.js_errors == []


FIRST_MESSAGES = [
    ("Garden plans\n\n```python\ndef hi(): return 42\n```\n\nWhat should I plant?", "Garden plans What should I plant?"),
    ("Some context first.\n\n## Planting by the moon\n\n```\nmoon()\n```", "Planting by the moon"),
]


@pytest.mark.parametrize("size", SIZES)
def test_a_first_message_with_code_is_titled_by_its_heading_or_its_words(live_app, page: Page, scripted_server,
                                                                            size):
    page.set_viewport_size(SIZES[size])
    for message, title in FIRST_MESSAGES:
        scripted_server.script(ScriptedReply(text="Happy to help."))
        page.goto(live_app.url)
        open_sidebar(page)
        page.locator(".sidebar").get_by_role("button", name="New chat").click()
        page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
        page.fill(COMPOSER, message)
        page.locator("[data-send-button]").click()
        wait_settled(page)
        expect(page.locator("[data-title-button]")).to_have_text(title)
        page.reload()
        expect(page.locator("[data-title-button]")).to_have_text(title)
    assert page.js_errors == []
