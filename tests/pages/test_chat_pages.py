"""Browser journeys through the chat pages, against a real Daphne.

Replies come from the scripted OpenAI-compatible server, so every streamed
word is known in advance and the request the app sent can be asserted.
"""

from __future__ import annotations

import json
import re
import threading

import pytest
from playwright.sync_api import Page, expect

from conversations.services.threads.thread_writes import conversation_create
from elion.models import AssistantSettings
from tests.pages.conftest import OWNER_PASSWORD
from tests.support.chat_page import (
    COMPOSER,
    bubble,
    message_action,
    rewind_confirmed,
    seed_conversation,
    send,
    wait_settled,
)
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Conversation, Message, MessageStatus, Role

pytestmark = pytest.mark.browser


def user_texts_sent(scripted_server) -> list[str]:
    """Every user turn the app put into its provider requests, in order."""
    texts = []
    for recorded in scripted_server.requests:
        body = recorded.body or {}
        for item in body.get("input") or body.get("messages") or []:
            if item.get("role") == "user":
                content = item.get("content")
                texts.append(content if isinstance(content, str) else json.dumps(content))
    return texts


def last_request_text(scripted_server) -> str:
    return json.dumps(scripted_server.last_request().body)


def test_new_chat_streams_a_reply_and_reports_request_size(live_app, page: Page, scripted_server):
    scripted_server.script(
        ScriptedReply(chunks=["Hello ", "AUMA, ", "lovely ", "to hear ", "from you."], delay_between_chunks=0.25)
    )
    page.goto(live_app.url)
    expect(page.get_by_text("There are no conversations yet")).to_be_visible()
    expect(page.locator("[data-testid=demo-banner]")).to_have_count(0)

    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    expect(page.get_by_text("Start a conversation with Elion Voicefire")).to_be_visible()

    send(page, "How are you today?")
    # The reply streams into a live bubble while the composer waits.
    live = page.locator(".message-assistant.status-streaming")
    expect(live).to_contain_text("Hello")
    expect(live.locator(".badge-live")).to_be_visible()
    expect(page.locator(COMPOSER)).to_be_disabled()
    expect(live).not_to_contain_text("from you.")

    wait_settled(page)
    reply = page.locator(".message-assistant").last
    expect(reply).to_contain_text("Hello AUMA, lovely to hear from you.")
    expect(reply.locator(".author")).to_have_text("Elion Voicefire")
    expect(bubble(page, "How are you today?").locator(".author")).to_have_text("AUMA")
    assert user_texts_sent(scripted_server) == ["How are you today?"]

    # Durable rows, and the page's estimate equals ceil(len/4) over them.
    conversation = Conversation.objects.get()
    rows = [m for m in Message.objects.filter(conversation=conversation) if m.role != Role.SYSTEM]
    assert [(m.role, m.status) for m in rows] == [("user", "complete"), ("assistant", "complete")]
    expected = sum(-(-len(m.content) // 4) for m in rows)
    expect(page.locator("[data-estimate]")).to_have_attribute("data-value", str(expected))
    # The auto-title from the first send replaces "New chat" without a reload.
    expect(page.locator("[data-title-button]")).to_have_text("How are you today?")

    page.click("[data-estimate-button]")
    panel = page.locator("[data-diagnostics-panel]")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("Request size details")
    expect(panel).to_contain_text("already included in static prompt")
    expect(panel).to_contain_text("App estimates")
    diagnostics = Message.objects.get(role=Role.ASSISTANT).metadata["diagnostics"]
    for key in ("history_tokens", "static_prompt_tokens", "total_input_tokens", "input_budget_tokens",
                "remaining_tokens", "trimmed_messages"):
        expect(panel.locator(f"[data-diag={key}]")).to_have_text(f"{diagnostics[key]:,}")
    assert page.js_errors == []


def test_markdown_is_rendered_and_markup_in_a_reply_is_inert(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation()
    scripted_server.script(
        ScriptedReply(
            chunks=[
                "Here is **bold** and a list:\n\n- one\n- two\n\n",
                "<script>window.elionPwned = 'script'</script>",
                '<img src="x" onerror="window.elionPwned = \'img\'">',
                " [click](javascript:window.elionPwned='link')",
            ],
            delay_between_chunks=0.1,
        )
    )
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, "Show me some formatting")
    wait_settled(page)

    def check_reply():
        reply = page.locator(".message-assistant").last
        expect(reply.locator(".message-body strong")).to_have_text("bold")
        expect(reply.locator(".message-body li")).to_have_count(2)
        expect(reply.locator("script, img, [onerror]")).to_have_count(0)
        expect(reply.locator("a[href^='javascript']")).to_have_count(0)
        # The markup is shown as text, never interpreted.
        expect(reply).to_contain_text("<script>window.elionPwned = 'script'</script>")
        reply.get_by_text("click", exact=False).last.click()
        assert page.evaluate("window.elionPwned") is None

    check_reply()
    page.reload()  # the server-rendered path must be just as safe
    check_reply()
    assert page.js_errors == []


def test_failed_reply_shows_badge_and_retry_produces_a_reply(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation()
    scripted_server.script(
        ScriptedReply(status=500, error_message="upstream exploded"),
        ScriptedReply(text="Second time lucky."),
    )
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, "Please answer")
    failed = page.locator(".message-assistant.status-failed")
    expect(failed.locator(".badge-error")).to_have_text("Failed")
    expect(failed.locator(".message-error")).to_contain_text("HTTP 500")
    expect(failed.locator(".message-error")).to_contain_text("upstream exploded")
    failed_id = failed.get_attribute("data-message-id")
    expect(page.locator(COMPOSER)).to_be_enabled()

    failed.locator(".message-error").get_by_role("button", name="Retry").click()
    wait_settled(page)
    expect(page.locator(".message-assistant.status-complete").last).to_contain_text("Second time lucky.")
    expect(page.locator(".message.status-failed")).to_have_count(0)
    # Retry made a sibling under the same user turn; the failed reply is kept, off the live branch.
    retried = Message.objects.get(pk=failed_id)
    assert retried.status == MessageStatus.FAILED
    sibling = Message.objects.exclude(pk=failed_id).get(role=Role.ASSISTANT, parent_id=retried.parent_id)
    assert sibling.content == "Second time lucky."
    assert Conversation.objects.get(pk=conversation.id).head_id == sibling.id
    assert user_texts_sent(scripted_server).count("Please answer") == 2


def test_edit_and_resend_makes_a_new_branch(live_app, page: Page, scripted_server):
    conversation, (q1, a1, q2, a2) = seed_conversation(
        ("user", "First question"), ("assistant", "First answer"),
        ("user", "Second question"), ("assistant", "Old second answer"),
    )
    scripted_server.script(ScriptedReply(text="New second answer"), ScriptedReply(text="A fresh start"))
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    second = page.locator(f"[data-message-id='{q2.id}']")
    message_action(second, "Edit")
    editor = second.locator(".edit-form textarea")
    expect(editor).to_have_value("Second question")
    editor.fill("Second question, rephrased")
    second.get_by_role("button", name="Send edit").click()

    wait_settled(page)
    expect(page.get_by_text("New second answer")).to_be_visible()
    expect(page.get_by_text("Old second answer")).to_have_count(0)
    expect(page.locator(".message-user .message-body", has_text=re.compile(r"^Second question$"))).to_have_count(0)
    expect(page.locator(".message")).to_have_count(4)

    edited = Message.objects.get(content="Second question, rephrased")
    assert edited.parent_id == a1.id  # a sibling of the original turn
    assert Message.objects.filter(pk__in=[q2.id, a2.id]).count() == 2  # nothing destroyed
    sent = last_request_text(scripted_server)
    assert "First answer" in sent and "Old second answer" not in sent

    page.reload()
    expect(page.get_by_text("New second answer")).to_be_visible()
    expect(page.get_by_text("Old second answer")).to_have_count(0)

    # Editing the very first message starts a new root (parent_id null).
    first = page.locator(f"[data-message-id='{q1.id}']")
    message_action(first, "Edit")
    first.locator(".edit-form textarea").fill("Start over")
    first.locator(".edit-form textarea").press("Enter")
    wait_settled(page)
    expect(page.locator(".message")).to_have_count(2)
    expect(page.get_by_text("A fresh start")).to_be_visible()
    assert Message.objects.get(content="Start over").parent_id is None


def test_rewind_moves_the_head_and_the_next_send_continues_from_there(live_app, page: Page, scripted_server):
    conversation, (q1, a1, q2, a2) = seed_conversation(
        ("user", "Tell me about tea"), ("assistant", "Tea is a leaf."),
        ("user", "And coffee?"), ("assistant", "Coffee is a bean."),
    )
    scripted_server.script(ScriptedReply(text="Cocoa is a bean too."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    target = page.locator(f"[data-message-id='{a1.id}']")
    rewind_confirmed(page, target)

    expect(page.get_by_text("Coffee is a bean.")).to_have_count(0)
    expect(page.locator(".message")).to_have_count(2)
    assert Conversation.objects.get(pk=conversation.id).head_id == a1.id
    assert Message.objects.filter(pk=a2.id).exists()

    send(page, "What about cocoa?")
    wait_settled(page)
    expect(page.get_by_text("Cocoa is a bean too.")).to_be_visible()
    assert Message.objects.get(content="What about cocoa?").parent_id == a1.id
    sent = last_request_text(scripted_server)
    assert "Tea is a leaf." in sent and "Coffee is a bean." not in sent


def test_phone_width_sidebar_collapses_and_sending_works(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation(("user", "Earlier"), ("assistant", "Earlier reply"), title="Phone chat")
    scripted_server.script(ScriptedReply(chunks=["Small ", "screens ", "work."], delay_between_chunks=0.05))
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    sidebar_box = page.locator("#sidebar").bounding_box()
    assert sidebar_box["x"] + sidebar_box["width"] <= 0, "the sidebar should be off-screen on a phone"
    composer = page.locator(COMPOSER)
    expect(composer).to_be_in_viewport()
    expect(page.locator("[data-send-button]")).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    send(page, "Does this fit?")
    wait_settled(page)
    expect(page.get_by_text("Small screens work.")).to_be_in_viewport()
    expect(composer).to_be_in_viewport()

    page.get_by_role("button", name="Open menu").click()
    expect(page.locator("#sidebar").get_by_text("Phone chat")).to_be_in_viewport()
    expect(page.locator("#sidebar").get_by_role("link", name="Memories")).to_have_attribute("href", "/memories/")
    page.keyboard.press("Escape")
    expect(page.locator("#sidebar").get_by_text("Phone chat")).not_to_be_in_viewport()
    assert page.js_errors == []


def test_settings_page_saves_names_and_the_chat_uses_them(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation(("user", "Hi"), ("assistant", "Hello!"))
    page.goto(f"{live_app.url}/settings/")
    page.fill("#display_name", "Nova Lumen")
    page.fill("#owner_name", "Sam")
    page.select_option("#personality", "warm")
    page.check("input[name=web_search]")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".flash")).to_contain_text("Settings saved")

    row = AssistantSettings.objects.get(pk=1)
    assert (row.display_name, row.owner_name, row.personality, row.web_search) == ("Nova Lumen", "Sam", "warm", True)

    page.goto(f"{live_app.url}/c/{conversation.id}/")
    expect(bubble(page, "Hello!").locator(".author")).to_have_text("Nova Lumen")
    expect(bubble(page, "Hi").locator(".author")).to_have_text("Sam")
    expect(page.locator(COMPOSER)).to_have_attribute("placeholder", "Message Nova Lumen…")
    expect(page.locator(".brand-name")).to_have_text("Nova Lumen")

    page.goto(f"{live_app.url}/settings/")
    page.fill("#display_name", "   ")
    page.locator("#display_name").evaluate("el => el.removeAttribute('required')")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("[data-settings-error]")).to_contain_text("display_name cannot be empty")
    assert AssistantSettings.objects.get(pk=1).display_name == "Nova Lumen"


def test_without_a_websocket_the_page_streams_over_sse(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation()
    scripted_server.script(ScriptedReply(chunks=["Over ", "plain ", "HTTP."], delay_between_chunks=0.05))
    page.add_init_script(
        """
        window.__posts = [];
        const realFetch = window.fetch;
        window.fetch = (url, init) => {
          if (init && init.method === 'POST') window.__posts.push(String(url));
          return realFetch(url, init);
        };
        window.WebSocket = class { constructor() { throw new Error('WebSocket blocked by test'); } };
        """
    )
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, "No sockets here")
    wait_settled(page)
    expect(page.locator(".message-assistant").last).to_contain_text("Over plain HTTP.")
    assert page.evaluate("window.__posts") == [f"/api/conversations/{conversation.id}/messages/"]
    assert user_texts_sent(scripted_server) == ["No sockets here"]


def test_reload_during_a_stream_resends_idempotently(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation()
    hold = threading.Event()
    scripted_server.script(ScriptedReply(chunks=["Patience ", "pays ", "off."], hold=hold))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, "Slow one please")
    expect(page.locator(".message-assistant.status-streaming")).to_contain_text("Patience")
    pending = page.evaluate(f"sessionStorage.getItem('elion:pending-send:{conversation.id}')")
    client_id = json.loads(pending)["client_message_id"]

    page.reload()
    # The unconfirmed send is sent again with the same client_message_id: no second turn.
    expect(page.locator(".message-assistant.status-streaming")).to_have_count(1)
    hold.set()
    wait_settled(page)
    expect(page.locator(".message-assistant").last).to_contain_text("Patience pays off.")
    assert page.evaluate(f"sessionStorage.getItem('elion:pending-send:{conversation.id}')") is None
    users = Message.objects.filter(conversation=conversation, role=Role.USER)
    assert [str(m.id) for m in users] == [client_id]
    assert Message.objects.filter(conversation=conversation, role=Role.ASSISTANT).count() == 1
    assert len(scripted_server.requests) == 1
    expect(page.locator(".message-user")).to_have_count(1)


def test_offline_demo_banner_login_and_logout(offline_protected_app, page: Page):
    app = offline_protected_app.url
    conversation_create(persona="elion", title="Private thoughts")
    page.goto(f"{app}/")
    page.wait_for_url(re.compile(r"/login/"))
    banner = page.locator("[data-testid=demo-banner]")
    expect(banner).to_contain_text("Offline demo provider — no OPENAI_API_KEY set; replies are canned")
    expect(page.get_by_text("Private thoughts")).to_have_count(0)  # nothing leaks before login

    page.fill("#password", "wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("not the owner's")
    page.fill("#password", OWNER_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f-]+/$"))
    expect(banner).to_be_visible()

    send(page, "Anyone there?")
    wait_settled(page)
    expect(page.locator(".message-assistant").last).to_contain_text("You said: Anyone there?")
    page.goto(f"{app}/settings/")
    expect(banner).to_be_visible()

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/login/"))
    page.goto(f"{app}/settings/")
    page.wait_for_url(re.compile(r"/login/\?next=/settings/"))
