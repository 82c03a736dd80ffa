"""Past Conversation Search says what it left out (issue 41, item 9): a word found only in a private chat gave
"No messages match (shielded conversations were not searched)", with no word that private chats were left out
too. The words now follow which of the two were skipped, for every combination of the two boxes."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from conversations.services.threads.thread_writes import conversation_create
from tests.support.factories import turns_append
from transcript.models import Conversation

pytestmark = pytest.mark.browser

NONE_MATCH = "No messages match"
WORDS = {
    (False, False): " (shielded conversations and private chats were not searched: tick their boxes to include them).",
    (True, False): " (private chats were not searched: tick their box to include them).",
    (False, True): " (shielded conversations were not searched: tick their box to include them).",
    (True, True): ".",
}


def seed() -> None:
    hidden_away = conversation_create(persona="elion", title="Quiet notes", private=True)
    turns_append(hidden_away, ("user", "the word is quokka"), ("assistant", "noted"))
    shielded = conversation_create(persona="elion", title="Shielded notes")
    turns_append(shielded, ("user", "the word is wombat"), ("assistant", "kept"))
    Conversation.objects.filter(pk=shielded.pk).update(shielded=True, updated_at=timezone.now())


@pytest.mark.parametrize("size", [{"width": 1366, "height": 900}, {"width": 390, "height": 844}],
                         ids=["desktop", "phone"])
def test_an_empty_search_names_what_it_left_out(live_app, page: Page, size):
    page.set_viewport_size(size)
    seed()
    for (shielded, private), words in WORDS.items():
        flags = "".join([("&include_shielded=true" if shielded else ""), ("&include_private=true" if private else "")])
        page.goto(f"{live_app.url}/search/?q=nowherefound{flags}")
        expect(page.locator("[data-search-empty]")).to_have_text(NONE_MATCH + words)

    # The case: the word is only in a private chat. The page says private chats were left out, and the
    # box it names finds it.
    page.goto(f"{live_app.url}/search/?q=quokka")
    expect(page.locator("[data-search-empty]")).to_contain_text("private chats were not searched")
    page.locator("[data-include-private]").check()
    page.get_by_role("button", name="Search").click()
    expect(page.locator("[data-search-group]")).to_contain_text("Quiet notes")
    expect(page.locator("[data-search-group] [data-private-tag]")).to_be_visible()
    # Only in a shielded conversation: the same for the shield.
    page.goto(f"{live_app.url}/search/?q=wombat&include_private=true")
    expect(page.locator("[data-search-empty]")).to_have_text(NONE_MATCH + WORDS[(False, True)])
    page.locator("[data-include-shielded]").check()
    page.get_by_role("button", name="Search").click()
    expect(page.locator("[data-search-group]")).to_contain_text("Shielded notes")
    assert not page.js_errors
