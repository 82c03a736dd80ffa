"""Talk, hands-free, in chromium with a fake microphone playing real recorded speech (issue 43).

- a spoken sentence followed by a pause becomes an ordinary user turn marked voice, and the reply is
  read aloud sentence by sentence while it still streams, and marked so; speaking again during playback stops it at once (barge-in) and becomes the next turn;
- Elion's own voice leaking back at playback level never becomes a turn (the same quiet voice does
  once nothing is playing, which shows the microphone was live all along);
- a failing transcription or speech provider ends the state with a sentence on the page, and Talk
  can be left at any moment; desktop and phone.
"""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect

from tests.pages.voice_browser import chromium_with_microphone
from tests.support.browser_waits import WAIT_MS
from tests.support.chat_page import SIZES, seed_conversation
from tests.support.scripted_audio import ScriptedSpeech, ScriptedTranscription, tone_wav
from tests.support.scripted_provider import ScriptedReply
from tests.support.voice_files import joined, scaled, silence, spoken_wav
from transcript.models import Message, Role

pytestmark = pytest.mark.browser

PLAYBACK_PROBE = """
window.__played = [];
window.__ended = 0;
window.__plays = [];  // one record per element played: did it end, was it stopped first?
const proto = HTMLMediaElement.prototype;
const play = proto.play;
const pause = proto.pause;
proto.play = function () {
  window.__played.push(this.src);
  // whileStreaming: a reply on the page was still being written when this playback began.
  const record = { ended: false, stopped: false,
                   whileStreaming: Boolean(document.querySelector(".message-assistant.status-streaming")) };
  window.__plays.push(record);
  this.__record = record;
  this.addEventListener("ended", () => { record.ended = true; window.__ended += 1; }, { once: true });
  return play.call(this);
};
proto.pause = function () {
  if (this.__record && !this.ended) this.__record.stopped = true;
  return pause.call(this);
};
// Every Talk state the page shows, in order: a state as short as a loaded machine's poll interval
// is still seen.
window.__talkStates = [];
new MutationObserver((changes) => {
  for (const change of changes) {
    const next = change.target.dataset.talkState;
    if (next && next !== window.__talkStates.at(-1)) window.__talkStates.push(next);
  }
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-talk-state"] });
"""


def talk_page(chromium, size="desktop"):
    context = chromium.new_context(viewport=SIZES[size], is_mobile=size == "phone", has_touch=size == "phone")
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.js_errors = []
    page.on("pageerror", lambda error: page.js_errors.append(str(error)))
    page.add_init_script(PLAYBACK_PROBE)
    return page


def transcriptions(server):
    return server.requests_to("/v1/audio/transcriptions")


def voice_turns(conversation):
    return list(Message.objects.filter(conversation=conversation, role=Role.USER, metadata__voice=True)
                .order_by("seq").values_list("content", flat=True))


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_talk_sends_a_spoken_turn_reads_the_reply_and_barge_in_stops_it(live_app, browser, scripted_server, tmp_path, size):
    speech = spoken_wav()
    microphone = joined(speech, silence(14.0, speech), speech, silence(30.0, speech))
    scripted_server.script_transcriptions(ScriptedTranscription(text="What should I plant this spring?"),
                                          ScriptedTranscription(text="Wait, tell me about tomatoes."))
    scripted_server.script_speech(ScriptedSpeech(audio=tone_wav(30.0)))
    # The reply streams two sentences, then holds: its first sentence is read while it is still streaming.
    held = threading.Event()
    scripted_server.script(ScriptedReply(chunks=["Plant peas in March. ", "Tomatoes wait for May. ", "Water both."],
                                         hold=held, hold_after_chunks=2))
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "Hello."))
    greeting = Message.objects.get(conversation=conversation, content="Hello.")
    with chromium_with_microphone(browser, tmp_path, recording=microphone, loop=False) as chromium:
        page = talk_page(chromium, size)
        page.goto(f"{live_app.url}/c/{conversation.id}/")
        page.locator("[data-talk-button]").click()
        chat = page.locator("[data-chat]")

        expect(page.locator(".message-user [data-voice-mark]")).to_have_count(1, timeout=30_000)
        page.wait_for_function("() => window.__talkStates.includes('speaking')", timeout=30_000)
        page.wait_for_function("() => window.__played.length >= 1")
        # Playback began while the reply was still being written (the provider holds its third sentence).
        assert page.evaluate("window.__plays[0].whileStreaming") is True
        spoken = [r.body["input"] for r in scripted_server.requests_to("/v1/audio/speech")]
        assert spoken[0] == "Plant peas in March."  # the finished sentence, not the one still open
        # The reply being read carries its voice mark (the earlier reply, never read, does not).
        first_reply = Message.objects.get(conversation=conversation, content__startswith="Plant peas in March.")
        expect(page.locator(f"#message-{first_reply.id} [data-read-aloud-mark]")).to_have_count(1)
        expect(page.locator(f"#message-{greeting.id} [data-read-aloud-mark]")).to_have_count(0)
        # The second sentence arrives while the 20 s reply is playing: playback stops at once.
        expect(page.locator(".message-user [data-voice-mark]")).to_have_count(2, timeout=30_000)
        first = page.evaluate("window.__plays[0]")
        assert first == {"ended": False, "stopped": True, "whileStreaming": True}  # cut off, not played out
        states = page.evaluate("window.__talkStates")
        speaking = states.index("speaking")
        assert states[speaking - 2:speaking] == ["hearing", "thinking"]  # a spoken turn, then its reply read
        assert states[speaking + 1] == "hearing"  # the owner's voice ended the reading (barge-in)
        assert voice_turns(conversation)[:2] == ["What should I plant this spring?", "Wait, tell me about tomatoes."]
        assert len(transcriptions(scripted_server)) >= 2

        # Barge-in stopped the streaming reply through Stop: its partial text is kept.
        assert Message.objects.filter(conversation=conversation, status="interrupted",
                                      content__startswith="Plant peas in March.").exists()
        page.locator("[data-talk-end]").click()
        expect(chat).to_have_attribute("data-talk", "off", timeout=30_000)
        expect(page.locator("[data-talk-bar]")).to_be_hidden()
        assert page.js_errors == []


def test_playback_alone_never_creates_a_turn(live_app, browser, scripted_server, tmp_path):
    # Elion's voice leaking back into the microphone: quieter than a person speaking to it, looped.
    quiet = scaled(spoken_wav(), 0.3)
    leak = joined(quiet, silence(2.0, quiet))
    scripted_server.script_speech(ScriptedSpeech(audio=tone_wav(8.0)))
    scripted_server.script_transcriptions(ScriptedTranscription(text="heard after the playback"))
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "A reply to read aloud."))
    with chromium_with_microphone(browser, tmp_path, recording=leak, loop=True) as chromium:
        page = talk_page(chromium)
        page.goto(f"{live_app.url}/c/{conversation.id}/")
        page.locator(".message-assistant [data-read-aloud]").click()
        page.wait_for_function("() => window.__played.length === 1")
        page.locator("[data-talk-button]").click()
        expect(page.locator("[data-chat]")).to_have_attribute("data-talk-state", "listening", timeout=30_000)

        page.wait_for_function("() => window.__ended === 1", timeout=30_000)  # the whole playback
        assert transcriptions(scripted_server) == []
        assert voice_turns(conversation) == []

        # The same quiet voice with nothing playing is speech: the microphone was live all along.
        expect(page.locator(".message-user [data-voice-mark]")).to_have_count(1, timeout=30_000)
        assert voice_turns(conversation) == ["heard after the playback"]
        assert page.js_errors == []


def test_failures_end_the_state_with_a_message(live_app, browser, scripted_server, tmp_path):
    speech = spoken_wav()
    microphone = joined(speech, silence(14.0, speech), speech, silence(30.0, speech))
    scripted_server.script_transcriptions(ScriptedTranscription(status=500, error_message="stt down"),
                                          ScriptedTranscription(text="Second try works."))
    scripted_server.script_speech(ScriptedSpeech(status=500, error_message="tts down"))
    conversation, _ = seed_conversation(("user", "hi"), ("assistant", "Hello."))
    with chromium_with_microphone(browser, tmp_path, recording=microphone, loop=False) as chromium:
        page = talk_page(chromium)
        page.goto(f"{live_app.url}/c/{conversation.id}/")
        page.locator("[data-talk-button]").click()
        notice = page.locator("[data-notice]")
        expect(notice).to_contain_text("could not be transcribed", timeout=30_000)
        expect(page.locator("[data-chat]")).to_have_attribute("data-talk-state", "listening", timeout=30_000)
        # The second sentence is sent; its reply's speech fails: "speaking" ends with the reason.
        expect(page.locator(".message-user [data-voice-mark]")).to_have_count(1, timeout=30_000)
        expect(notice).to_contain_text("could not be read aloud", timeout=30_000)
        expect(page.locator("[data-chat]")).to_have_attribute("data-talk-state", "listening", timeout=30_000)
        expect(page.locator("[data-chat]")).to_have_attribute("data-speaking", "false", timeout=30_000)
        page.keyboard.press("Escape")
        expect(page.locator("[data-chat]")).to_have_attribute("data-talk", "off", timeout=30_000)
        assert page.js_errors == []
