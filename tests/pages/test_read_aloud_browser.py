"""Read aloud in chromium (issue 43), desktop and phone: the speaker on a reply plays its segments one
after another, a replay makes no provider request, pressing it again stops at once, a failing speech
provider ends "speaking" with a sentence on the page, and the automatic setting reads a new reply."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from conversations.services.settings_writes import assistant_settings_update
from tests.support.chat_page import SIZES, seed_conversation, send, wait_settled
from tests.support.scripted_audio import ScriptedSpeech, tone_wav

pytestmark = pytest.mark.browser

# Counts what the page plays: every play() and every segment that played to its end.
PLAYBACK_PROBE = """
window.__played = [];
window.__ended = 0;
const play = HTMLMediaElement.prototype.play;
HTMLMediaElement.prototype.play = function () {
  window.__played.push(this.src);
  this.addEventListener("ended", () => { window.__ended += 1; }, { once: true });
  return play.call(this);
};
"""
REPLY = "First sentence of the reply. " + " ".join(f"Sentence {n} says a little more about the plan." for n in range(12))


def speaker(page, text):
    return page.locator(".message-assistant", has_text=text).locator("[data-read-aloud]")


def speech_requests(server):
    return server.requests_to("/v1/audio/speech")


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_reply_is_read_aloud_and_a_replay_costs_no_provider_request(live_app, page, scripted_server, size):
    page.set_viewport_size(SIZES[size])
    page.add_init_script(PLAYBACK_PROBE)
    conversation, _ = seed_conversation(("user", "What is the plan?"), ("assistant", REPLY))
    page.goto(f"{live_app.url}/c/{conversation.id}/")

    button = speaker(page, "First sentence")
    button.click()
    expect(button).to_have_attribute("data-state", "speaking")
    expect(button).to_have_attribute("data-state", "idle", timeout=30_000)
    made = len(speech_requests(scripted_server))
    segments = page.evaluate("window.__played.length")
    assert made == segments >= 2
    assert page.evaluate("window.__ended") == segments  # every segment played to its end
    expect(page.locator("[data-notice]")).to_be_hidden()

    button.click()
    expect(button).to_have_attribute("data-state", "idle", timeout=30_000)
    assert page.evaluate("window.__ended") == 2 * segments
    assert len(speech_requests(scripted_server)) == made  # replayed from the kept blobs
    assert page.js_errors == []


def test_pressing_the_speaker_again_stops_at_once(live_app, page, scripted_server):
    page.add_init_script(PLAYBACK_PROBE)
    scripted_server.script_speech(ScriptedSpeech(audio=tone_wav(6.0)))
    conversation, _ = seed_conversation(("user", "Hi"), ("assistant", "A long first sentence. And a second."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    button = speaker(page, "A long first sentence")
    button.click()
    page.wait_for_function("() => window.__played.length === 1")
    page.wait_for_timeout(300)
    button.click()
    expect(button).to_have_attribute("data-state", "idle")
    page.wait_for_timeout(500)
    assert page.evaluate("window.__ended") == 0
    assert page.evaluate("window.__played.length") == 1  # the next segment never started
    assert page.js_errors == []


def test_a_failing_speech_provider_ends_speaking_with_a_message(live_app, page, scripted_server):
    scripted_server.script_speech(ScriptedSpeech(status=500, error_message="tts down"))
    conversation, _ = seed_conversation(("user", "Hi"), ("assistant", "Hello there."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    button = speaker(page, "Hello there.")
    button.click()
    notice = page.locator("[data-notice]")
    expect(notice).to_contain_text("could not be read aloud")
    expect(button).to_have_attribute("data-state", "idle")
    expect(page.locator("[data-chat]")).to_have_attribute("data-speaking", "false")
    assert page.js_errors == []


def test_replies_are_read_automatically_when_the_owner_asks(live_app, page, scripted_server):
    assistant_settings_update(read_aloud_auto=True)
    page.add_init_script(PLAYBACK_PROBE)
    conversation, _ = seed_conversation(("user", "Hi"), ("assistant", "Hello."))
    page.goto(f"{live_app.url}/c/{conversation.id}/")
    assert page.evaluate("window.__played.length") == 0  # replies already there are not read on load
    send(page, "Tell me something")
    wait_settled(page)
    page.wait_for_function("() => window.__ended >= 1", timeout=30_000)
    (request,) = speech_requests(scripted_server)
    assert request.body["input"] == "Scripted reply."
