"""Stored markup never runs: every place the owner's or the model's text is shown, in a real browser.

The same hostile payload goes in through every door a user has (the composer, so it also becomes
the conversation's auto-title; an uploaded Markdown archive document; a Library file; a memory; a
folder; a character; a model reply), then every page that shows it is opened in chromium. Rule:
no dialog opens, no injected script or event handler runs, and the payload is shown as text.

And the WebSocket refuses an anonymous browser when owner password protection is on.
"""

from __future__ import annotations

import re

import pytest
from django.db import transaction
from playwright.sync_api import Page, expect

from archive.models import ArchiveDocument, LibraryFile
from archive.services.library import library_file_add_text
from conversations.services.characters import character_create
from conversations.services.threads.thread_writes import conversation_create, folder_create
from memories.services.memory_writes import memory_add
from tests.pages.conftest import OWNER_PASSWORD
from tests.support.chat_page import send, wait_settled
from tests.support.dialogs import DialogWatch
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, Message, Role

pytestmark = pytest.mark.browser

MARK = "pwnedmarker"
PAYLOAD = (
    f"{MARK} <script>window.__pwned = 'script'; alert('script')</script>"
    "<img src=x onerror=\"window.__pwned = 'img'; alert('img')\">"
    "<svg onload=\"alert('svg')\"></svg>"
    "\"><script>alert('attribute')</script>"
    "</textarea><script>alert('textarea')</script>"
    " [click me](javascript:alert('link'))"
)
# A handler attribute or a javascript: URL anywhere in the document means markup got through.
INJECTED = "[onerror], [onload], a[href^='javascript' i], iframe, object, embed"


def assert_inert(page: Page, dialogs: DialogWatch, where: str) -> None:
    page.wait_for_load_state("load")
    assert dialogs.opened == [], where
    assert page.evaluate("window.__pwned") is None, where
    assert page.locator(INJECTED).count() == 0, where
    assert page.locator("script", has_text="__pwned").count() == 0, where


def test_hostile_markup_stored_anywhere_never_runs_in_the_browser(live_app, page: Page, scripted_server):
    dialogs = DialogWatch(page)
    folder = folder_create(name=f"Folder {PAYLOAD}")
    with transaction.atomic():
        memory = memory_add(text=f"Memory {PAYLOAD}")
    character = character_create(name=f"Char {MARK}", description=f"Character {PAYLOAD}")
    library = library_file_add_text(name=f"{MARK}.md", text=f"# Library\n\n{PAYLOAD}").file
    conversation = conversation_create(persona="elion", folder_id=folder.id)
    scripted_server.script(ScriptedReply(chunks=["Reply ", PAYLOAD], delay_between_chunks=0.05))

    # The composer: the payload becomes a user turn and the conversation's auto-title; the reply streams it back.
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, PAYLOAD)
    wait_settled(page)
    assert_inert(page, dialogs, "chat page while streaming")
    expect(page.locator(".message-user .message-body")).to_contain_text("<script>window.__pwned")
    assert Conversation.objects.get(pk=conversation.pk).title.startswith(MARK)
    assert Message.objects.get(conversation=conversation, role=Role.ASSISTANT).content.endswith(PAYLOAD)

    # An uploaded Markdown document, through the archive page's form.
    page.goto(f"{live_app.url}/archive/")
    upload = page.locator("[data-archive-upload]")
    upload.locator("#doc-title").fill(f"Doc {PAYLOAD}")
    upload.locator("#doc-file").set_input_files(
        {"name": f"{MARK}.md", "mimeType": "text/markdown", "buffer": f"# Heading\n\n{PAYLOAD}\n".encode()}
    )
    upload.get_by_role("button", name="Archive").click()
    expect(page.locator(".flash")).to_contain_text("Archived")
    document = ArchiveDocument.objects.get()
    assert PAYLOAD in document.text

    shown_on = {
        f"/c/{conversation.id}/": "the chat page, reloaded",
        "/": "home",
        "/archive/": "archive list",
        f"/archive/?q={MARK}": "archive search results",
        f"/archive/{document.id}/": "archive document",
        "/library/": "library list",
        f"/library/{library.id}/": "library file",
        "/memories/": "memories",
        f"/memories/{memory.id}/edit/": "memory edit form",
        "/characters/": "characters",
        f"/characters/{character.id}/edit/": "character edit form",
        f"/search/?q={MARK}&include_shielded=on": "past conversation search",
        f"/c/{conversation.id}/?quote={MARK}": "composer with a quote",
    }
    for path, where in shown_on.items():
        page.goto(f"{live_app.url}{path}")
        assert_inert(page, dialogs, where)
        assert MARK in page.content(), f"{where} does not show the stored text at all"
    assert LibraryFile.objects.filter(pk=library.pk).exists()
    assert page.js_errors == []


def test_the_websocket_refuses_an_anonymous_browser_when_protected(offline_protected_app, page: Page):
    conversation = conversation_create(persona="elion", title="Private")
    app = offline_protected_app.url
    probe = """async (url) => await new Promise((resolve) => {
        const socket = new WebSocket(url);
        socket.onopen = () => { socket.close(); resolve('open'); };
        socket.onclose = (event) => resolve(`closed ${event.code}`);
    })"""
    socket_url = app.replace("http://", "ws://") + f"/ws/conversations/{conversation.id}/"

    page.goto(f"{app}/login/")
    assert page.evaluate(probe, socket_url) != "open"

    page.fill("#password", OWNER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    assert page.evaluate(probe, socket_url) == "open"  # the same socket opens for the owner
