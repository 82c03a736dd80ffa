"""Browser journeys through the shell at desktop (1366×900) and phone (390×844) size: the doors,
the chat menu's exports, the phone composer, banners folded to one line, tap targets, the sidebar
filter, and the provider change leading to a branch that can send."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from conversations.services.characters import character_create
from conversations.services.threads.thread_writes import conversation_create, folder_create
from conversations.services.visibility.transitions import conversation_restore, conversation_trash
from tests.support.chat_page import COMPOSER, seed_conversation, send, wait_settled
from tests.support.factories import turns_append
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, Message, Role
from transcript.provider.binding import configured_provider

pytestmark = pytest.mark.browser

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
PHONE = SIZES["phone"]
# One line of a banner: its 44 px "More" toggle (or button) and a little padding.
ONE_LINE_MAX = 56
TAP_MIN = 44


def navigation_open(page: Page, size: str) -> None:
    """On a phone the sidebar is a drawer behind the menu button."""
    if size == "phone":
        page.get_by_role("button", name="Open menu").click()
        expect(page.locator("#sidebar")).to_be_in_viewport()


def small_controls(page: Page, scope: str) -> list[str]:
    """Visible controls inside `scope` smaller than TAP_MIN × TAP_MIN, described."""
    return page.evaluate(
        """([scope, minimum]) => {
            const controls = document.querySelectorAll(
              `${scope} :is(a[href], button, select, input:not([type=hidden]), textarea, summary, label.attach-button, .pin-picker, label:has(input[type=checkbox]), label:has(input[type=radio]))`);
            const small = [];
            for (const el of controls) {
              if (el.closest(".visually-hidden") || el.classList.contains("visually-hidden")) continue;
              if (el.matches("[data-attach-input], .pin-select")) continue;  // lie over their 44 px icon
              // A checkbox or radio inside its label: the label is what is tapped (measured as a control).
              if (el.matches("input[type=checkbox], input[type=radio]") && el.closest("label")) continue;
              const box = el.getBoundingClientRect();
              const style = getComputedStyle(el);
              if (!box.width || !box.height || style.visibility === "hidden") continue;
              if (box.width < minimum - 0.5 || box.height < minimum - 0.5) {
                small.push(`${el.tagName.toLowerCase()}.${el.className} "${(el.textContent || el.getAttribute("aria-label") || "").trim().slice(0, 30)}" ${Math.round(box.width)}×${Math.round(box.height)}`);
              }
            }
            return small;
        }""",
        [scope, TAP_MIN],
    )


@pytest.mark.parametrize("size", SIZES)
def test_archive_and_library_open_from_the_navigation(live_app, page: Page, size):
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "hello"))
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    for name, path in (("Archive", "/archive/"), ("Library", "/library/"), ("Memories", "/memories/"),
                       ("Characters", "/characters/"), ("Artifacts", "/artifacts/"), ("Usage", "/settings/usage/"),
                       ("Settings", "/settings/")):
        navigation_open(page, size)
        page.locator(".sidebar-foot").get_by_role("link", name=name, exact=True).click()
        page.wait_for_url(f"{live_app.url}{path}")
        expect(page.locator(".sidebar-foot").get_by_role("link", name=name, exact=True)).to_have_attribute(
            "aria-current", "page"
        )
    navigation_open(page, size)
    page.locator("[data-nav-search]").click()
    page.wait_for_url(re.compile(r"/search/"))
    assert page.js_errors == []


@pytest.mark.parametrize("size", SIZES)
def test_chat_menu_exports_markdown_and_json(live_app, page: Page, size):
    conversation, messages = seed_conversation(
        ("user", "Which tea for the evening?"), ("assistant", "Chamomile, **unsweetened**."), title="Tea talk"
    )
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    page.click("[data-conversation-menu] > summary")
    with page.expect_download() as markdown_download:
        page.get_by_role("link", name="Export as Markdown").click()
    markdown = markdown_download.value
    assert markdown.suggested_filename == f"conversation-{conversation.id}.md"
    text = Path(markdown.path()).read_text(encoding="utf-8")
    assert text.startswith("# Tea talk\n")
    assert "\nAUMA said:\nWhich tea for the evening?\n" in text  # the seed's speaker labels
    assert "\nElion Voicefire said:\nChamomile, **unsweetened**.\n" in text

    with page.expect_download() as json_download:
        page.get_by_role("link", name="Export as JSON").click()
    exported = json.loads(Path(json_download.value.path()).read_text(encoding="utf-8"))
    assert json_download.value.suggested_filename == f"conversation-{conversation.id}.json"
    assert exported["conversation"]["id"] == str(conversation.id)
    assert [(m["role"], m["content"]) for m in exported["messages"]] == [(m.role, m.content) for m in messages]
    assert page.js_errors == []


def test_phone_composer_keeps_most_of_its_width_for_text_with_a_character_saved(live_app, page: Page,
                                                                                 scripted_server):
    character_create(name="Echo", description="A fox made of starlight.")
    conversation, _ = seed_conversation(("user", "hello"), ("assistant", "Hello, AUMA."))
    scripted_server.script(ScriptedReply(chunks=["A ", "riddle."]))
    page.set_viewport_size(PHONE)
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    composer = page.locator("[data-composer]").bounding_box()
    text_box = page.locator(COMPOSER).bounding_box()
    assert text_box["width"] / composer["width"] >= 0.70, (text_box["width"], composer["width"])
    icon = page.locator(".pin-picker").bounding_box()
    assert icon["width"] >= TAP_MIN and icon["height"] >= TAP_MIN
    assert icon["width"] < 60, "on a phone the character picker is an icon"

    # The icon is the picker: choosing there pins the character for the next message only.
    page.locator("[data-pin-character]").select_option(label="Echo")
    expect(page.locator("[data-pin-character]")).to_have_class(re.compile("is-pinned"))
    send(page, "A riddle, please.")
    wait_settled(page)
    expect(page.locator("[data-pin-character]")).to_have_value("")
    body = scripted_server.last_request().body
    systems = [item["content"] for item in body.get("input") or body.get("messages") if item["role"] == "system"]
    assert any("A fox made of starlight." in text for text in systems)
    assert page.js_errors == []


def banner_height(page: Page, selector: str) -> float:
    return page.locator(selector).bounding_box()["height"]


def test_banners_are_one_line_on_a_phone_until_more_opens_them(live_app, page: Page):
    shielded = conversation_create(title="Came back from the trash")
    turns_append(shielded, ("user", "hi"), ("assistant", "hello"))
    conversation_trash(conversation_id=shielded.id)
    conversation_restore(conversation_id=shielded.id)
    hidden_folder = folder_create(name="Letters", hidden=True)
    hidden = conversation_create(title="In a hidden folder", folder_id=hidden_folder.id)
    page.set_viewport_size(PHONE)

    page.goto(f"{live_app.url}/c/{shielded.id}/")
    banner = page.locator("[data-visibility-banner=shielded]")
    assert banner_height(page, "[data-visibility-banner=shielded]") <= ONE_LINE_MAX
    expect(banner.locator(".banner-detail")).to_be_hidden()
    # The banner's main action stays on its one line.
    expect(banner.get_by_role("button", name="Release shield")).to_be_in_viewport()
    more = banner.get_by_role("button", name="More")
    expect(more).to_have_attribute("aria-expanded", "false")
    more.click()
    expect(banner.locator(".banner-detail")).to_be_visible()
    expect(banner.get_by_role("button", name="Release shield")).to_be_visible()
    expect(banner.get_by_role("button", name="Less")).to_have_attribute("aria-expanded", "true")
    assert banner_height(page, "[data-visibility-banner=shielded]") > ONE_LINE_MAX
    banner.get_by_role("button", name="Less").click()
    assert banner_height(page, "[data-visibility-banner=shielded]") <= ONE_LINE_MAX

    page.goto(f"{live_app.url}/c/{hidden.id}/")
    assert banner_height(page, "[data-visibility-banner=hidden]") <= ONE_LINE_MAX
    expect(page.locator("[data-visibility-banner=hidden]")).to_contain_text("In the hidden folder")

    # On a wide screen the banner is whole and there is no toggle.
    page.set_viewport_size(SIZES["desktop"])
    expect(page.locator("[data-visibility-banner=hidden] .banner-detail")).to_be_visible()
    expect(page.locator("[data-visibility-banner=hidden] [data-banner-more]")).to_be_hidden()
    assert page.js_errors == []


def test_every_shell_control_is_a_44px_tap_target_on_a_phone(live_app, page: Page):
    character_create(name="Echo", description="A fox.")
    folder_create(name="Work")
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "hello"))
    conversation_trash(conversation_id=conversation.id)
    conversation_restore(conversation_id=conversation.id)  # shielded: a banner with an action
    page.set_viewport_size(PHONE)
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    assert small_controls(page, ".topbar") == []
    assert small_controls(page, "[data-composer]") == []
    page.locator("[data-banner] [data-banner-more]").click()
    assert small_controls(page, "[data-banner]") == []
    page.click("[data-conversation-menu] > summary")
    assert small_controls(page, ".conversation-menu-panel") == []
    page.keyboard.press("Escape")
    page.click("[data-conversation-menu] > summary")
    navigation_open(page, "phone")
    page.locator(".new-folder summary").click()
    assert small_controls(page, "#sidebar") == []


@pytest.mark.parametrize("size", SIZES)
def test_sidebar_filter_narrows_the_list_by_title_from_the_keyboard(live_app, page: Page, size):
    seed_conversation(("user", "a"), title="Lighthouse weekend")
    seed_conversation(("user", "b"), title="Tomatoes after rain")
    target, _ = seed_conversation(("user", "c"), title="Light reading")
    page.set_viewport_size(SIZES[size])
    page.goto(live_app.url)
    navigation_open(page, size)
    nav = page.locator("[data-conversation-nav]")

    box = page.get_by_label("Filter conversations by title")
    box.focus()
    page.keyboard.type("LIGHT")
    expect(nav.locator("[data-conversation-item]:visible")).to_have_count(2)
    expect(nav.get_by_role("link", name=re.compile("Tomatoes"))).to_be_hidden()
    expect(page.locator("[data-sidebar-filter-status]")).to_have_text("2 chats match")
    page.keyboard.type(" r")
    expect(nav.locator("[data-conversation-item]:visible")).to_have_count(1)
    page.keyboard.press("Escape")
    expect(box).to_have_value("")
    expect(nav.locator("[data-conversation-item]:visible")).to_have_count(3)
    page.keyboard.type("zzz")
    expect(page.locator("[data-sidebar-filter-empty]")).to_be_visible()
    page.keyboard.press("Escape")
    page.keyboard.type("light r")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_app.url}/c/{target.id}/")
    assert page.js_errors == []


@pytest.mark.parametrize("size", SIZES)
def test_a_demo_chat_continues_under_a_new_provider_in_one_click(live_app, page: Page, scripted_server, size):
    offline = replace(configured_provider(), api_key="").binding()
    demo = conversation_create(title="Started offline")
    turns_append(demo, ("user", "Hello?"), ("assistant", "A canned demo reply."), binding=offline.__dict__)
    scripted_server.script(ScriptedReply(chunks=["Now ", "with a ", "real model."]))
    page.set_viewport_size(SIZES[size])
    page.goto(f"{live_app.url}/c/{demo.id}/")

    banner = page.locator("[data-binding-problem=provider_mismatch]")
    expect(banner).to_contain_text("This chat was held with the offline demo provider.")
    if size == "phone":
        assert banner.bounding_box()["height"] <= ONE_LINE_MAX
        banner.get_by_role("button", name="More").click()
    expect(banner).to_contain_text(
        "Continue it with gpt-5.5 (openai): Branch / Fresh Chat carries its final exchange into a new chat."
    )
    expect(banner).not_to_contain_text("differs from")
    banner.get_by_role("button", name="Branch / Fresh Chat").click()
    page.wait_for_url(lambda url: re.search(r"/c/[0-9a-f-]+/$", url) and str(demo.id) not in url)
    branch = Conversation.objects.exclude(pk=demo.pk).get()
    assert page.url == f"{live_app.url}/c/{branch.id}/"
    expect(page.locator("[data-binding-problem]")).to_have_count(0)
    expect(page.locator(".message-handoff")).to_contain_text("A canned demo reply.")

    send(page, "Are you there now?")
    wait_settled(page)
    expect(page.locator(".message-assistant").last).to_contain_text("Now with a real model.")
    reply = Message.objects.filter(conversation=branch, role=Role.ASSISTANT).order_by("-seq").first()
    assert reply.provider_type == "openai" and reply.content == "Now with a real model."
    assert Message.objects.filter(conversation=demo).count() == 2  # the demo chat is left as it was
    assert page.js_errors == []
