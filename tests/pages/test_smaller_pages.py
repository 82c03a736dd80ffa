"""Browser journeys for issue 19's smaller items: Search → Insert as a quote block in a grown composer,
folder rename and delete from the sidebar and the Hidden folders page, flash messages that leave by
themselves (success) or stay until closed (errors), without motion when the owner asks for none."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from conversations.services.threads.thread_writes import conversation_create
from tests.support.factories import turns_append
from transcript.models import Conversation, Folder

pytestmark = pytest.mark.browser


def seed(*pairs: tuple[str, str], title: str, folder: Folder | None = None) -> Conversation:
    conversation = conversation_create(persona="elion", title=title, folder_id=folder.pk if folder else None)
    turns_append(conversation, *pairs)
    return conversation


class Dialogs:
    def __init__(self, page: Page, accept: bool = True):
        self.messages: list[str] = []
        self.accept = accept
        page.on("dialog", self._answer)

    def _answer(self, dialog):
        self.messages.append(dialog.message)
        dialog.accept() if self.accept else dialog.dismiss()


def test_search_insert_keeps_the_lines_as_a_quote_block_and_grows_the_composer(live_app, page: Page, scripted_server):
    seed(("user", "Three things about the heron:\n- it waits\n- it watches\n\nThen it flies."), ("assistant", "Yes."),
         title="Heron notes")
    current = seed(("user", "hello"), ("assistant", "hi"), title="Today")
    page.goto(f"{live_app.url}/c/{current.id}/")
    one_line = page.locator("[data-composer-input]").evaluate("el => el.clientHeight")
    page.goto(f"{live_app.url}/search/?q=heron&from={current.id}")
    page.locator("[data-insert-excerpt]").first.click()
    page.wait_for_url(re.compile(rf"/c/{current.id}/\?quote="))
    composer = page.locator("[data-composer-input]")
    expect(composer).to_have_value(
        "> Three things about the heron:\n> - it waits\n> - it watches\n>\n> Then it flies.\n— from “Heron notes”\n\n"
    )
    expect(composer).to_be_focused()
    grown = composer.evaluate("el => ({height: el.clientHeight, content: el.scrollHeight})")
    # Grown to show the whole quote: taller than one line and no hidden overflow.
    assert grown["height"] > one_line * 3 and grown["content"] <= grown["height"] + 1
    assert scripted_server.requests == []
    assert not page.js_errors


def test_rename_then_delete_a_folder_from_the_sidebar(live_app, page: Page):
    letters = Folder.objects.create(name="Letters")
    inside = seed(("user", "dear heron"), ("assistant", "dear AUMA"), title="A letter", folder=letters)
    dialogs = Dialogs(page)
    page.goto(f"{live_app.url}/c/{inside.id}/")
    menu = page.locator(f"[data-folder-menu='{letters.id}']")
    menu.locator("summary").click()
    menu.get_by_label("Folder name").fill("Old letters")
    menu.get_by_role("button", name="Rename").click()
    expect(page.locator(".flash-success", has_text="Folder renamed “Old letters”.")).to_be_visible()
    expect(page.locator(".sidebar .group-name", has_text="Old letters")).to_be_visible()
    assert Folder.objects.get(pk=letters.pk).name == "Old letters"

    menu.locator("summary").click()
    menu.get_by_role("button", name="Delete folder").click()
    expect(page.locator(".flash-success", has_text="Folder “Old letters” deleted.")).to_be_visible()
    assert dialogs.messages[-1].startswith("Delete the folder “Old letters”? Its conversations are kept and move to Chats")
    assert not Folder.objects.exists()
    inside.refresh_from_db()
    assert (inside.folder_id, inside.shielded) == (None, False)
    expect(page.locator(f"[data-conversation-link='{inside.id}']")).to_be_visible()
    assert not page.js_errors


def test_deleting_a_hidden_folder_asks_first_and_its_conversations_come_back_shielded(live_app, page: Page):
    vault = Folder.objects.create(name="Vault", hidden=True)
    inside = seed(("user", "a secret"), ("assistant", "kept"), title="Secret", folder=vault)
    refusing = Dialogs(page, accept=False)
    page.goto(f"{live_app.url}/folders/hidden/")
    menu = page.locator(f"[data-folder-menu='{vault.id}']")
    menu.locator("summary").click()
    expect(menu).to_contain_text("Continuity-Shielded until you release them")
    menu.get_by_role("button", name="Delete folder").click()
    assert "leave quarantine Continuity-Shielded" in refusing.messages[-1]
    assert Folder.objects.filter(pk=vault.pk).exists()  # dismissed: nothing happened

    refusing.accept = True
    menu.get_by_role("button", name="Delete folder").click()
    expect(page.locator(".flash-success")).to_contain_text("Its one conversation moved to Chats and left quarantine")
    inside.refresh_from_db()
    assert (inside.folder_id, inside.shielded) == (None, True)
    expect(page.locator(f"[data-conversation-link='{inside.id}'] [data-shield-tag]")).to_be_visible()
    assert not page.js_errors


def test_success_messages_leave_by_themselves_and_errors_stay_until_closed(live_app, page: Page):
    page.clock.install()  # the page's timers run on a clock the test moves on
    page.goto(f"{live_app.url}/settings/")
    new_folder = page.locator(".new-folder")
    new_folder.locator("summary").click()
    new_folder.get_by_label("Folder name").fill("Letters")
    new_folder.get_by_role("button", name="Create").click()
    success = page.locator(".flash-success", has_text="Folder “Letters” created.")
    expect(success.locator(".flash-text")).to_have_attribute("role", "status")  # on the text: the item stays a listitem
    page.clock.run_for(6_000)  # a success message stays 7 s
    expect(success).to_be_visible()
    page.clock.run_for(2_000)
    expect(success).to_have_count(0)

    new_folder.locator("summary").click()
    new_folder.get_by_label("Folder name").fill("   ")
    new_folder.get_by_role("button", name="Create").click()
    error = page.locator(".flash-error", has_text="A folder needs a name.")
    expect(error.locator(".flash-text")).to_have_attribute("role", "alert")
    page.clock.run_for(9_000)  # longer than a success message stays
    expect(error).to_be_visible()
    expect(error).to_have_attribute("data-flash-ready", "true")
    error.get_by_role("button", name="Dismiss this message").click()
    expect(error).to_have_count(0)
    expect(page.locator("[data-flash-list]")).to_have_count(0)
    assert not page.js_errors


@pytest.mark.parametrize("motion", ["no-preference", "reduce"])
def test_a_closed_message_fades_only_when_motion_is_welcome(live_app, page: Page, motion):
    page.emulate_media(reduced_motion=motion)
    page.goto(f"{live_app.url}/settings/")
    new_folder = page.locator(".new-folder")
    new_folder.locator("summary").click()
    new_folder.get_by_label("Folder name").fill("Letters")
    new_folder.get_by_role("button", name="Create").click()
    expect(page.locator(".flash-success")).to_be_visible()
    # The message is in the server's HTML before flash.js (a module, run after parsing) binds its button.
    expect(page.locator("[data-flash][data-flash-ready]")).to_have_count(1)
    left_at_once = page.evaluate(
        "() => { document.querySelector('[data-flash-close]').click();"
        " return document.querySelectorAll('[data-flash]').length === 0; }"
    )
    assert left_at_once == (motion == "reduce")
    expect(page.locator("[data-flash]")).to_have_count(0)
