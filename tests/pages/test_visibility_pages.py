"""Browser journeys for visibility (issue 6): hide a folder, trash → restore → shield →
release, and Past Conversation Search with and without shielded conversations.

Every action that changes continuity asks for confirmation first; the dialogs
are answered (and their wording checked) through Playwright.
"""

from __future__ import annotations

import re

import pytest
from django.db import transaction
from playwright.sync_api import Page, expect

from continuity.rules.prompt_store import static_prompt_ensure
from conversations.services.threads.thread_writes import conversation_create
from tests.support.factories import turns_append
from transcript.access import access_conversation
from transcript.models import Conversation, Folder, Message, Role

pytestmark = pytest.mark.browser

WORDS = "the lantern under the cedar stairs"


def seed(*pairs: tuple[str, str], title: str, folder: Folder | None = None) -> Conversation:
    conversation = conversation_create(persona="elion", title=title, folder_id=folder.id if folder else None)
    turns_append(conversation, *pairs, parent=None, binding=None)  # unbound rows, as before bindings
    return conversation


def store_prompt(conversation: Conversation) -> str:
    with transaction.atomic():
        return static_prompt_ensure(access_conversation(conversation.pk, lock=True)).content


def stored_prompt(conversation: Conversation) -> str:
    return Message.objects.get(conversation_id=conversation.pk, role=Role.SYSTEM).content


class Dialogs:
    """Accept (or dismiss) every confirmation and remember its text."""

    def __init__(self, page: Page, accept: bool = True):
        self.messages: list[str] = []
        self.accept = accept
        page.on("dialog", self._answer)

    def _answer(self, dialog):
        self.messages.append(dialog.message)
        dialog.accept() if self.accept else dialog.dismiss()


def test_hide_a_folder_from_the_sidebar_then_unhide_it(live_app, page: Page):
    letters = Folder.objects.create(name="Letters")
    source = seed(("user", f"Remember {WORDS}?"), ("assistant", "I do."), title="Lantern letter", folder=letters)
    destination = seed(("user", "hello"), ("assistant", "hi"), title="Today")
    assert WORDS in store_prompt(destination)
    dialogs = Dialogs(page)

    page.goto(f"{live_app.url}/c/{destination.id}/")
    group = page.locator(".conversation-group", has=page.locator(".group-name", has_text="Letters"))
    expect(group.get_by_role("link", name=re.compile("Lantern letter"))).to_be_visible()
    group.get_by_role("button", name="Hide").click()
    expect(page.locator(".flash", has_text="Folder “Letters” is hidden")).to_be_visible()
    assert "automatic continuity stops using them" in dialogs.messages[-1]
    # Gone from the sidebar, counted under Hidden folders; the prompt was refreshed before the redirect.
    expect(page.locator(".group-name", has_text="Letters")).to_have_count(0)
    expect(page.locator("[data-nav-hidden-folders]")).to_contain_text("1")
    assert WORDS not in stored_prompt(destination)

    # The hidden-folders view: deliberate access still opens the conversation.
    page.locator("[data-nav-hidden-folders]").click()
    page.wait_for_url(re.compile(r"/folders/hidden/$"))
    folder = page.locator(f"[data-hidden-folder='{letters.id}']")
    folder.get_by_role("link", name="Lantern letter").click()
    page.wait_for_url(re.compile(rf"/c/{source.id}/$"))
    expect(page.locator("[data-visibility-banner=hidden]")).to_contain_text("hidden folder “Letters”")
    expect(page.locator(".message", has_text=WORDS)).to_be_visible()

    page.goto(f"{live_app.url}/folders/hidden/")
    page.locator(f"[data-hidden-folder='{letters.id}']").get_by_role("button", name="Unhide").click()
    expect(page.locator(".flash", has_text="visible again")).to_be_visible()
    assert "Continuity-Shielded" in dialogs.messages[-1]
    source.refresh_from_db()
    assert source.shielded and not Folder.objects.get(pk=letters.pk).hidden
    expect(page.locator("[data-hidden-folders-empty]")).to_be_visible()
    assert not page.js_errors


def test_cancelled_confirmation_changes_nothing(live_app, page: Page):
    letters = Folder.objects.create(name="Letters")
    seed(("user", "q"), ("assistant", "r"), title="Kept", folder=letters)
    dialogs = Dialogs(page, accept=False)
    page.goto(f"{live_app.url}/trash/")
    page.locator(".conversation-group", has=page.locator(".group-name", has_text="Letters")).get_by_role(
        "button", name="Hide"
    ).click()
    page.wait_for_timeout(300)
    assert dialogs.messages and not Folder.objects.get(pk=letters.pk).hidden
    expect(page).to_have_url(re.compile(r"/trash/$"))


def test_trash_restore_shield_badge_and_release(live_app, page: Page):
    source = seed(("user", f"Remember {WORDS}?"), ("assistant", "Always."), title="Lantern talk")
    destination = seed(("user", "hello"), ("assistant", "hi"), title="Today")
    assert WORDS in store_prompt(destination)
    dialogs = Dialogs(page)

    page.goto(f"{live_app.url}/c/{source.id}/")
    page.locator("[data-conversation-menu] summary").click()
    page.locator("[data-trash-button]").click()
    expect(page.locator("[data-visibility-banner=trashed]")).to_be_visible()
    assert "handoffs it gave other threads are removed" in dialogs.messages[-1]
    expect(page.locator("[data-composer-input]")).to_be_disabled()
    expect(page.locator("[data-trashed-badge]")).to_be_visible()
    assert WORDS not in stored_prompt(destination)
    expect(page.locator(".message", has_text=WORDS)).to_be_visible()  # still readable

    page.locator("[data-nav-trash]").click()
    item = page.locator(f"[data-trashed-conversation='{source.id}']")
    expect(item).to_contain_text("Lantern talk")
    item.locator("[data-restore]").click()
    page.wait_for_url(re.compile(rf"/c/{source.id}/$"))
    assert "Continuity-Shielded" in dialogs.messages[-1]
    expect(page.locator("[data-shield-badge]")).to_be_visible()
    banner = page.locator("[data-visibility-banner=shielded]")
    expect(banner).to_contain_text("stays out of automatic continuity")
    expect(page.locator(f"[data-conversation-link='{source.id}'] [data-shield-tag]")).to_be_visible()
    expect(page.locator("[data-composer-input]")).to_be_enabled()
    assert WORDS not in stored_prompt(destination)

    banner.locator("[data-release-shield]").click()
    expect(page.locator(".flash", has_text="Shield released")).to_be_visible()
    assert "feeds automatic continuity again" in dialogs.messages[-1]
    expect(page.locator("[data-shield-badge]")).to_have_count(0)
    expect(page.locator("[data-visibility-banner]")).to_have_count(0)
    source.refresh_from_db()
    assert not source.shielded and not source.trashed
    assert WORDS in stored_prompt(destination)
    assert not page.js_errors


def test_search_with_and_without_shielded_and_insert_a_result(live_app, page: Page, scripted_server):
    seed(("user", "Where did the heron nest?"), ("assistant", "By the reed bank."), title="Open heron")
    shielded = seed(("user", "The heron came back at dusk."), ("assistant", "Yes."), title="Shielded heron")
    Conversation.objects.filter(pk=shielded.pk).update(shielded=True)
    current = seed(("user", "hello"), ("assistant", "hi"), title="Today")

    page.goto(f"{live_app.url}/c/{current.id}/")
    page.locator("[data-nav-search]").click()
    page.wait_for_url(re.compile(rf"/search/\?from={current.id}$"))
    expect(page.locator("[data-include-shielded]")).not_to_be_checked()
    page.fill("#search-q", "heron")
    page.get_by_role("button", name="Search").click()
    groups = page.locator("[data-search-group]")
    expect(groups).to_have_count(1)
    expect(groups.first).to_contain_text("Open heron")
    expect(page.locator("[data-search-hit]")).to_have_count(1)

    page.locator("[data-include-shielded]").check()
    page.get_by_role("button", name="Search").click()
    expect(groups).to_have_count(2)
    shielded_group = page.locator(f"[data-search-group='{shielded.id}']")
    expect(shielded_group.locator("[data-shield-tag]")).to_be_visible()
    expect(shielded_group).to_contain_text("The heron came back at dusk.")
    shielded.refresh_from_db()
    assert shielded.shielded  # searching released nothing

    shielded_group.locator("[data-insert-excerpt]").click()
    page.wait_for_url(re.compile(rf"/c/{current.id}/\?quote="))
    composer = page.locator("[data-composer-input]")
    expect(composer).to_have_value(re.compile(r"^> The heron came back at dusk\.\n— from “Shielded heron”"))
    assert scripted_server.requests == []  # nothing reaches the model until it is sent
    assert not page.js_errors
