"""Versions on the chat page (issue 19): "‹ i / n ›" after Retry and after an edit, by mouse, keyboard
and touch-sized targets; rewind asks first and its later turns come back through the switcher; the
"⋯" menu per message with Copy."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.support.chat_page import message_action, rewind_confirmed, seed_conversation, send, wait_settled
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, Message

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])


def head_id(conversation) -> str:
    return str(Conversation.objects.get(pk=conversation.id).head_id)


def shown_texts(page: Page) -> list[str]:
    return [text.strip() for text in page.locator(".message:visible .message-body").all_inner_texts()]


def versions(bubble):
    return bubble.get_by_role("group", name="Versions of this message")


def assert_tap_target(locator, minimum: float = 44) -> None:
    box = locator.bounding_box()
    assert box is not None and box["width"] >= minimum and box["height"] >= minimum, box


@SIZES
def test_after_retry_the_reply_shows_its_versions_and_switching_shows_each(
    live_app, page: Page, scripted_server, viewport
):
    page.set_viewport_size(viewport)
    conversation, (question, first) = seed_conversation(("user", "Name a colour"), ("assistant", "Blue."))
    scripted_server.script(ScriptedReply(text="Green."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    expect(page.get_by_role("group", name="Versions of this message")).to_have_count(0)
    message_action(page.locator(f"#message-{first.id}"), "Retry")
    wait_settled(page)
    reply = page.locator(".message-assistant:visible").last
    expect(reply).to_contain_text("Green.")
    expect(versions(reply)).to_contain_text("2 / 2")
    expect(versions(reply).get_by_role("button", name="Next version")).to_be_disabled()
    if viewport is PHONE:
        assert_tap_target(versions(reply).get_by_role("button", name="Previous version"))

    versions(reply).get_by_role("button", name="Previous version").click()
    older = page.locator(f"#message-{first.id}")
    expect(versions(older)).to_contain_text("1 / 2")
    assert shown_texts(page) == ["Name a colour", "Blue."]
    assert head_id(conversation) == str(first.id)
    # Reloading shows the version chosen: it is the conversation's head, not page state.
    page.reload()
    expect(versions(page.locator(f"#message-{first.id}"))).to_contain_text("1 / 2")
    versions(page.locator(f"#message-{first.id}")).get_by_role("button", name="Next version").click()
    expect(page.locator(".message-assistant").last).to_contain_text("Green.")
    assert Message.objects.filter(conversation=conversation).exclude(role="system").count() == 3  # nothing lost
    assert page.js_errors == []


@SIZES
def test_after_an_edit_the_turn_shows_its_versions_and_the_keyboard_switches_them(
    live_app, page: Page, scripted_server, viewport
):
    page.set_viewport_size(viewport)
    conversation, (q1, a1, q2, a2) = seed_conversation(
        ("user", "First question"), ("assistant", "First answer"),
        ("user", "Second question"), ("assistant", "Old second answer"),
    )
    scripted_server.script(ScriptedReply(text="New second answer"))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    second = page.locator(f"#message-{q2.id}")
    message_action(second, "Edit")
    second.locator(".edit-form textarea").fill("Second question, rephrased")
    second.get_by_role("button", name="Send edit").click()
    wait_settled(page)
    edited = page.locator(".message-user:visible").last
    expect(edited).to_contain_text("Second question, rephrased")
    expect(versions(edited)).to_contain_text("2 / 2")

    # Keyboard: focus Previous, Enter; the new version's switcher keeps the focus.
    versions(edited).get_by_role("button", name="Previous version").focus()
    page.keyboard.press("Enter")
    original = page.locator(f"#message-{q2.id}")
    expect(versions(original)).to_contain_text("1 / 2")
    assert shown_texts(page) == ["First question", "First answer", "Second question", "Old second answer"]
    assert head_id(conversation) == str(a2.id)
    expect(versions(original).get_by_role("button", name="Next version")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator(".message-assistant").last).to_contain_text("New second answer")
    assert head_id(conversation) != str(a2.id)
    assert page.js_errors == []


def test_rewind_asks_first_and_the_later_turns_come_back_through_the_switcher(
    live_app, page: Page, scripted_server
):
    conversation, (q1, a1, q2, a2) = seed_conversation(
        ("user", "Tell me about tea"), ("assistant", "Tea is a leaf."),
        ("user", "And coffee?"), ("assistant", "Coffee is a bean."),
    )
    scripted_server.script(ScriptedReply(text="Cocoa is a bean too."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    target = page.locator(f"#message-{a1.id}")

    # Cancel changes nothing; the dialog says where the later turns will be.
    message_action(target, "Rewind to here")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("version switcher")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert head_id(conversation) == str(a2.id)
    # Escape closes it as Cancel does.
    message_action(target, "Rewind to here")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert head_id(conversation) == str(a2.id)

    rewind_confirmed(page, target)
    expect(page.locator(".message")).to_have_count(2)
    assert head_id(conversation) == str(a1.id)
    # Straight after the rewind: "Later turns" on the reply rewound to.
    page.locator(f"#message-{a1.id}").get_by_role("button", name="Later turns").click()
    expect(page.locator(".message")).to_have_count(4)
    expect(page.locator(".message").last).to_contain_text("Coffee is a bean.")
    assert head_id(conversation) == str(a2.id)

    # Rewind and send: the new turn and the rewound-away one are versions of each other.
    rewind_confirmed(page, page.locator(f"#message-{a1.id}"))
    expect(page.locator(".message")).to_have_count(2)
    send(page, "What about cocoa?")
    wait_settled(page)
    expect(page.get_by_text("Cocoa is a bean too.")).to_be_visible()
    page.reload()
    turn = page.locator(".message-user").last
    expect(versions(turn)).to_contain_text("2 / 2")
    versions(turn).get_by_role("button", name="Previous version").click()
    expect(page.locator(".message").last).to_contain_text("Coffee is a bean.")
    assert shown_texts(page) == ["Tell me about tea", "Tea is a leaf.", "And coffee?", "Coffee is a bean."]
    assert head_id(conversation) == str(a2.id)
    assert page.js_errors == []


@SIZES
def test_each_message_has_one_actions_menu_and_copy_puts_its_text_on_the_clipboard(
    live_app, page: Page, viewport
):
    page.set_viewport_size(viewport)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_app.url)
    conversation, (question, answer) = seed_conversation(
        ("user", "Line one\nline two"), ("assistant", "A **bold** answer.\n\nSecond paragraph."),
    )
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    for bubble in page.locator(".message").all():
        expect(bubble.get_by_role("button", name="Message actions")).to_have_count(1)
    reply = page.locator(f"#message-{answer.id}")
    toggle = reply.get_by_role("button", name="Message actions")
    reply.hover()
    expect(toggle).to_be_visible()
    if viewport is PHONE:
        assert_tap_target(toggle)
    toggle.click()
    menu = reply.get_by_role("menu")
    expect(menu).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    items = menu.get_by_role("menuitem")
    # Rewinding to the last reply would change nothing: it is not offered there.
    assert items.all_inner_texts() == ["Copy", "Retry", "Fork from here"]
    for index in range(items.count()):
        box = items.nth(index).bounding_box()
        assert box is not None and box["height"] >= 44, box
    # The keyboard moves through the menu and Escape closes it back onto its button.
    page.keyboard.press("ArrowDown")
    expect(items.nth(1)).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_be_hidden()
    expect(toggle).to_be_focused()

    message_action(reply, "Copy")
    expect(reply.get_by_role("status")).to_have_text("Copied")
    # The message as written: its Markdown (issue 34).
    assert page.evaluate("navigator.clipboard.readText()") == "A **bold** answer.\n\nSecond paragraph."
    expect(reply.get_by_role("menu")).to_be_hidden()
    message_action(page.locator(f"#message-{question.id}"), "Copy")
    expect(page.locator(f"#message-{question.id}").get_by_role("status")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "Line one\nline two"
    assert page.js_errors == []
