"""Layout on desktop (1366×900) and phone (390×844), issue 34: the thread lands at its true bottom after a reply
whose image loads late, a message's ⋯ menu stays on screen, and a phone banner keeps its main action on its line
without squeezing the chat title below a readable width."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from conversations.services.settings_writes import assistant_settings_update
from conversations.services.threads.thread_writes import conversation_create
from conversations.services.visibility.transitions import conversation_restore, conversation_trash
from tests.support.chat_page import SIZES, distance_from_bottom, png_base64, send, wait_settled
from tests.support.factories import turns_append
from tests.support.scripted_provider import ScriptedImageCall, ScriptedReply

pytestmark = pytest.mark.browser

PARAGRAPH = "A long walk along the shore, the tide coming in over the flat stones. " * 6
# The title button keeps room for about a dozen characters.
READABLE_TITLE_PX = 100


def long_thread(title: str = "A long walk"):
    conversation = conversation_create(title=title)
    turns_append(conversation, *[pair for _ in range(8) for pair in (("user", PARAGRAPH), ("assistant", PARAGRAPH))])
    return conversation


@pytest.mark.parametrize("size", SIZES)
def test_the_thread_lands_at_its_true_bottom_after_an_image_reply(live_app, page: Page, scripted_server, size):
    assistant_settings_update(image_generation=True)
    conversation = long_thread()
    scripted_server.script(ScriptedReply(images=[ScriptedImageCall(partials=0, b64=png_base64(640, 640))],
                                         text="Here is the lighthouse."))
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, "Draw me a lighthouse.")
    wait_settled(page)
    image = page.locator(".message-assistant").last.locator("[data-generated-image] img")
    expect(image).to_have_count(1)
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    assert image.bounding_box()["height"] > 150, "the image takes real room in the thread"
    page.wait_for_function(
        "() => { const l = document.querySelector('[data-messages]'); return l.scrollHeight - l.scrollTop - l.clientHeight < 2; }"
    )
    expect(page.locator(".message-assistant").last.get_by_text("Here is the lighthouse.")).to_be_in_viewport()
    assert distance_from_bottom(page) < 2
    assert page.js_errors == []


@pytest.mark.parametrize("size", SIZES)
def test_a_message_menu_stays_on_screen(live_app, page: Page, size):
    conversation = long_thread()
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    for role in ("user", "assistant"):
        bubble = page.locator(f".message-{role}").last
        bubble.hover()
        bubble.get_by_role("button", name="Message actions").click()
        menu = bubble.get_by_role("menu")
        expect(menu).to_be_visible()
        box = menu.bounding_box()
        width = SIZES[size]["width"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"the {role} menu runs off screen: {box}"
        for item in menu.get_by_role("menuitem").all():
            item_box = item.bounding_box()
            assert item_box["x"] + item_box["width"] <= width
        page.keyboard.press("Escape")
        expect(menu).to_be_hidden()
    assert page.js_errors == []


def test_phone_banners_keep_their_main_action_and_a_readable_title(live_app, page: Page):
    title = "Letters about the lighthouse keeper and the winter storms"
    shielded = long_thread(title)
    conversation_trash(conversation_id=shielded.id)
    conversation_restore(conversation_id=shielded.id)
    trashed = long_thread(title)
    conversation_trash(conversation_id=trashed.id)
    page.set_viewport_size(SIZES["phone"])

    for conversation, kind, action in ((shielded, "shielded", "Release shield"), (trashed, "trashed", "Restore")):
        page.goto(f"{live_app.url}/c/{conversation.id}/")
        banner = page.locator(f"[data-visibility-banner={kind}]")
        expect(banner.get_by_role("button", name=action)).to_be_in_viewport(ratio=1)
        expect(banner.locator(".banner-detail")).to_be_hidden()
        assert page.locator("[data-title-button]").bounding_box()["width"] >= READABLE_TITLE_PX
    assert page.js_errors == []
