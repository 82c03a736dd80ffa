"""Dictation in chromium with a fake microphone playing a real recorded sentence (issue 43), on a
desktop and a phone: the recording reaches the provider through `POST /api/transcriptions/`, the words
land in the composer where the caret was, nothing is sent by itself, and a failure puts the composer
back as it was with a sentence on the page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.pages.voice_browser import chromium_with_microphone
from tests.support.browser_waits import WAIT_MS
from tests.support.chat_page import COMPOSER, SIZES, seed_conversation
from tests.support.scripted_audio import ScriptedTranscription
from transcript.models import Message

pytestmark = pytest.mark.browser



@pytest.fixture(scope="module")
def microphone_browser(browser, tmp_path_factory):
    with chromium_with_microphone(browser, tmp_path_factory.mktemp("voice")) as chromium:
        yield chromium


@pytest.fixture
def voice_page(microphone_browser, request):
    size = getattr(request, "param", "desktop")
    context = microphone_browser.new_context(viewport=SIZES[size], is_mobile=size == "phone", has_touch=size == "phone")
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda error: page.js_errors.append(str(error)))
    yield page
    context.close()


def record_for_a_moment(page) -> None:
    button = page.locator("[data-dictate-button]")
    expect(button).to_be_visible()
    button.click()
    expect(button).to_have_attribute("data-state", "recording")
    page.wait_for_timeout(1500)  # let the fake microphone play part of the sentence
    button.click()


@pytest.mark.parametrize("voice_page", ["desktop", "phone"], indirect=True)
def test_dictation_fills_the_composer_around_what_was_typed(live_app, voice_page, scripted_server):
    page = voice_page
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "Hello."))
    scripted_server.script_transcriptions(ScriptedTranscription(text="water the plants tomorrow"))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    page.fill(COMPOSER, "Please  first.")
    page.evaluate("sel => { const box = document.querySelector(sel); box.setSelectionRange(7, 7); }", COMPOSER)

    record_for_a_moment(page)

    expect(page.locator(COMPOSER)).to_have_value("Please water the plants tomorrow first.")
    expect(page.locator("[data-dictate-button]")).to_have_attribute("data-state", "idle")
    (request,) = scripted_server.requests_to("/v1/audio/transcriptions")
    recorded = request.body["file"]
    assert recorded["content_type"] in ("audio/webm", "audio/ogg")
    assert recorded["size"] > 1000  # real Opus from MediaRecorder, not an empty blob
    assert request.body["model"] == "gpt-4o-transcribe"
    assert Message.objects.filter(conversation=conversation).count() == 2  # nothing was sent by itself
    assert page.js_errors == []


def test_a_failed_transcription_keeps_the_typed_words_and_says_why(live_app, voice_page, scripted_server):
    page = voice_page
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "Hello."))
    scripted_server.script_transcriptions(ScriptedTranscription(status=500, error_message="upstream broke"))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    page.fill(COMPOSER, "Typed before")

    record_for_a_moment(page)

    notice = page.locator("[data-notice]")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("could not be transcribed")
    expect(page.locator(COMPOSER)).to_have_value("Typed before")
    expect(page.locator("[data-dictate-button]")).to_have_attribute("data-state", "idle")
    assert page.js_errors == []


def test_a_kept_recording_is_sent_with_the_turn(live_app, voice_page, scripted_server):
    from conversations.services.settings_writes import assistant_settings_update

    assistant_settings_update(keep_voice_recordings=True)
    page = voice_page
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "Hello."))
    scripted_server.script_transcriptions(ScriptedTranscription(text="a spoken note"))
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    record_for_a_moment(page)

    expect(page.locator(COMPOSER)).to_have_value("a spoken note")
    expect(page.locator("[data-attachment-chips] .attachment-chip-name")).to_have_text(["voice-recording.webm"])
    page.press(COMPOSER, "Enter")
    expect(page.locator(".message-assistant")).to_have_count(2)
    user = Message.objects.filter(conversation=conversation, content="a spoken note").get()
    assert [entry.attachment.kind for entry in user.manifest.select_related("attachment")] == ["audio"]
