"""The chat page resumes a reply that is still streaming, and stops one.

Real Daphne, real chromium; the scripted provider holds the reply mid-stream.
"""

from __future__ import annotations

import json
import threading

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser_waits import WAIT_MS
from tests.support.chat_page import COMPOSER, seed_conversation, send, wait_settled
from tests.support.factories import wait_until
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Message, MessageStatus, Role

pytestmark = pytest.mark.browser

CHUNKS = ["Patience ", "pays ", "off."]


def record_socket_frames(page: Page) -> dict[str, list[dict]]:
    """Every JSON frame the page's WebSockets send and receive."""
    frames: dict[str, list[dict]] = {"sent": [], "received": []}

    def on_socket(ws):
        ws.on("framesent", lambda payload: frames["sent"].append(json.loads(payload)))
        ws.on("framereceived", lambda payload: frames["received"].append(json.loads(payload)))

    page.on("websocket", on_socket)
    return frames


def live_body(page: Page):
    return page.locator(".message-assistant").last.locator(".message-body")


def test_a_reload_mid_stream_resumes_the_reply_live(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation()
    hold = threading.Event()
    scripted_server.script(ScriptedReply(chunks=CHUNKS, hold=hold, delay_between_chunks=0.05))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, "Slow one please")
    expect(live_body(page)).to_have_text("Patience ")
    # The first delta is shown before its flush commits: reload once it is stored, so the page renders it.
    wait_until(lambda: Message.objects.filter(conversation=conversation, role=Role.ASSISTANT, content="Patience ").exists())
    # As if the send came from another device: nothing to resend, only a reply to follow.
    page.evaluate("sessionStorage.clear()")
    frames = record_socket_frames(page)
    page.reload()
    expect(page.locator(".message-assistant.status-streaming")).to_have_count(1)
    expect(live_body(page)).to_have_text("Patience ")
    expect(page.locator("[data-stop-button]")).to_be_visible()
    page.wait_for_function("() => document.querySelector('[data-chat]').dataset.busy === 'true'")
    hold.set()
    wait_settled(page)
    # The rest arrived over the socket, after the text the page was rendered with, once.
    expect(live_body(page)).to_have_text("Patience pays off.")
    assistant = Message.objects.get(conversation=conversation, role=Role.ASSISTANT)
    watch = [f for f in frames["sent"] if f.get("type") == "watch"]
    assert watch == [{"type": "watch", "message_id": str(assistant.id), "after_seq": len("Patience ")}]
    live = [f["text"] for f in frames["received"] if f["type"] == "delta"]
    assert live == ["pays ", "off."]
    assert (assistant.status, assistant.content) == (MessageStatus.COMPLETE, "Patience pays off.")
    assert page.js_errors == []


def test_a_second_tab_sees_the_same_stream(live_app, page: Page, browser, scripted_server):
    conversation, _ = seed_conversation()
    hold = threading.Event()
    scripted_server.script(ScriptedReply(chunks=CHUNKS, hold=hold, delay_between_chunks=0.05))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    send(page, "Both tabs, please")
    expect(live_body(page)).to_have_text("Patience ")
    other = browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        second = other.new_page()
        second.set_default_timeout(WAIT_MS)
        second.goto(f"{live_app.url}/c/{conversation.id}/")
        expect(live_body(second)).to_have_text("Patience ")
        second.wait_for_function("() => document.querySelector('[data-chat]').dataset.busy === 'true'")
        hold.set()
        for tab in (page, second):
            wait_settled(tab)
            expect(live_body(tab)).to_have_text("Patience pays off.")
            expect(tab.locator(".message-user")).to_have_count(1)
    finally:
        hold.set()
        other.close()


def test_the_stop_button_keeps_the_partial_reply_as_interrupted(live_app, page: Page, scripted_server):
    conversation, _ = seed_conversation()
    hold = threading.Event()
    scripted_server.script(ScriptedReply(chunks=CHUNKS, hold=hold))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    stop = page.locator("[data-stop-button]")
    expect(stop).to_be_hidden()
    try:
        send(page, "Go on for a while")
        expect(live_body(page)).to_have_text("Patience ")
        expect(stop).to_be_enabled()
        expect(page.locator("[data-send-button]")).to_be_hidden()
        stop.click()
        interrupted = page.locator(".message-assistant.status-interrupted")
        expect(interrupted).to_have_count(1)
        expect(interrupted.locator(".message-body")).to_have_text("Patience")
        expect(interrupted.locator(".message-error")).to_contain_text("Stopped before the reply finished")
        expect(page.locator(COMPOSER)).to_be_enabled()
        expect(stop).to_be_hidden()
        expect(page.locator("[data-send-button]")).to_be_visible()
    finally:
        hold.set()
    assistant = Message.objects.get(conversation=conversation, role=Role.ASSISTANT)
    assert (assistant.status, assistant.content, assistant.error) == (MessageStatus.INTERRUPTED, "Patience ", "stopped")
    assert page.js_errors == []


def test_an_open_idle_tab_shows_a_reply_sent_from_another_tab(live_app, page: Page, browser, scripted_server):
    conversation, _ = seed_conversation()
    hold = threading.Event()
    scripted_server.script(ScriptedReply(chunks=CHUNKS, hold=hold, delay_between_chunks=0.05))
    frames = record_socket_frames(page)
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    page.wait_for_function("() => document.querySelector('[data-chat]').dataset.busy !== 'true'")
    for _ in range(200):  # the idle tab's socket is following the conversation
        if {"type": "following"} in frames["received"]:
            break
        page.wait_for_timeout(25)
    else:
        raise AssertionError(f"no follow acknowledgement: {frames}")
    other = browser.new_context(viewport={"width": 1280, "height": 860})
    try:
        sender = other.new_page()
        sender.set_default_timeout(WAIT_MS)
        sender.goto(f"{live_app.url}/c/{conversation.id}/")
        send(sender, "Sent from the other tab")
        expect(live_body(page)).to_have_text("Patience ")
        expect(page.locator(".message-user .message-body")).to_have_text("Sent from the other tab")
        expect(page.locator("[data-stop-button]")).to_be_visible()
        hold.set()
        for tab in (page, sender):
            wait_settled(tab)
            expect(live_body(tab)).to_have_text("Patience pays off.")
            expect(tab.locator(".message-user")).to_have_count(1)
    finally:
        hold.set()
        other.close()
    assert page.js_errors == []
