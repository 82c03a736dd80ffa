"""Audio usage and its cost (issue 43): every transcription and piece of speech the provider made is
recorded as the provider reported it (tokens, or seconds) or, where it reports nothing (speech), by the
characters sent and the audio made; a replay from the stored blob and the offline demo cost nothing.
Settings → Usage and `GET /api/usage/` show it beside the text usage, priced from the settings.
Through the real openai SDK to the scripted provider, on both databases."""

from __future__ import annotations

import io
import wave
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient

from elion.models import AudioCall, AudioUsage
from operations.audio_usage import AudioCallRow, call_cost, configured_audio_prices
from tests.support.scripted_audio import ScriptedTranscription
from tests.support.sending import create_conversation
from tests.support.voice_files import spoken_wav

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

REPLY = " ".join(f"This is sentence number {n} of a reply about the garden." for n in range(12))
AUDIO_PRICES = ("TRANSCRIBE_AUDIO_INPUT_PER_MTOK", "TRANSCRIBE_TEXT_INPUT_PER_MTOK", "TRANSCRIBE_OUTPUT_PER_MTOK",
                "TRANSCRIBE_PER_MINUTE", "SPEECH_PER_MINUTE", "SPEECH_PER_MCHAR")


@pytest.fixture(autouse=True)
def no_audio_prices(settings, tmp_path):
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    for name in AUDIO_PRICES:
        setattr(settings, f"ELION_PRICE_{name}", None)


async def transcribe(client: AsyncClient, conversation_id: str):
    recording = SimpleUploadedFile("recording.wav", spoken_wav(), content_type="audio/wav")
    response = await client.post("/api/transcriptions/", {"file": recording, "conversation_id": conversation_id})
    assert response.status_code == 200, response.content
    return response.json()


async def audio_today(client: AsyncClient) -> dict:
    body = (await client.get("/api/usage/")).json()
    (today,) = body["audio"]["days"]
    assert body["audio"]["months"][0]["transcriptions"] == today["transcriptions"]
    return today


def wav_seconds_of(data: bytes) -> float:
    with wave.open(io.BytesIO(data)) as audio:
        return audio.getnframes() / audio.getframerate()


async def test_a_transcription_is_recorded_in_the_tokens_the_provider_reported_and_priced(scripted_provider, settings):
    settings.ELION_PRICE_TRANSCRIBE_AUDIO_INPUT_PER_MTOK = Decimal("6")
    settings.ELION_PRICE_TRANSCRIBE_OUTPUT_PER_MTOK = Decimal("10")
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    scripted_provider.script_transcriptions(ScriptedTranscription(text="Water the plants tomorrow please."))

    body = await transcribe(client, conversation_id)

    # The scripted done event reports 40 audio input tokens and one output token per word (5).
    (row,) = await sync_to_async(list)(AudioUsage.objects.all())
    assert (row.kind, row.model, row.reported) == (AudioCall.TRANSCRIPTION, "gpt-4o-transcribe", "tokens")
    assert (row.input_tokens, row.input_audio_tokens, row.input_text_tokens, row.output_tokens) == (40, 40, 0, 5)
    assert row.seconds == pytest.approx(body["duration_seconds"], abs=0.001)  # no duration reported: the WAV's
    today = await audio_today(client)
    assert today["transcriptions"] == 1 and today["speech_requests"] == 0
    assert (today["transcription_input_tokens"], today["transcription_output_tokens"]) == (40, 5)
    assert today["speech_characters"] is None and today["unpriced_calls"] == 0
    assert today["estimated_cost_usd"] == "0.000290"  # (40 × 6 + 5 × 10) / 1e6


async def test_a_duration_billed_model_is_priced_by_the_minute(scripted_provider, settings):
    settings.ELION_TRANSCRIBE_MODEL = "whisper-1"
    settings.ELION_PRICE_TRANSCRIBE_PER_MINUTE = Decimal("0.006")
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    scripted_provider.script_transcriptions(
        ScriptedTranscription(text="Hello.", usage={"type": "duration", "seconds": 30.0})
    )

    await transcribe(client, conversation_id)

    (row,) = await sync_to_async(list)(AudioUsage.objects.all())
    assert (row.reported, row.seconds, row.input_tokens) == ("duration", 30.0, None)
    today = await audio_today(client)
    assert today["transcription_seconds"] == 30.0
    assert today["estimated_cost_usd"] == "0.003000"  # half a minute at $0.006


async def test_speech_is_recorded_per_segment_made_and_a_replay_costs_nothing(
    scripted_provider, settings, make_conversation, make_turns,
):
    settings.ELION_PRICE_SPEECH_PER_MCHAR = Decimal("15")
    conversation = await sync_to_async(make_conversation)()
    _, reply = await sync_to_async(make_turns)(conversation, ("user", "hello"), ("assistant", REPLY))
    client = AsyncClient()
    base = f"/api/conversations/{conversation.id}/messages/{reply.id}/speech/"
    segments = (await client.get(base + "segments/")).json()["segments"]
    assert len(segments) >= 2
    made = [await client.get(segment["url"]) for segment in segments]

    rows = await sync_to_async(list)(AudioUsage.objects.order_by("id"))
    assert [row.kind for row in rows] == [AudioCall.SPEECH] * len(segments)
    assert [row.characters for row in rows] == [segment["characters"] for segment in segments]
    assert [row.seconds for row in rows] == pytest.approx([wav_seconds_of(r.content) for r in made])
    assert {row.reported for row in rows} == {"none"}  # audio.speech.create reports no usage

    for segment in segments:  # replayed from the kept blobs
        assert (await client.get(segment["url"])).status_code == 200
    assert (await client.get(base)).status_code == 200  # the whole reply, joined from the same blobs
    assert await sync_to_async(AudioUsage.objects.count)() == len(segments)
    assert len(scripted_provider.requests_to("/v1/audio/speech")) == len(segments)

    today = await audio_today(client)
    characters = sum(segment["characters"] for segment in segments)
    assert (today["speech_requests"], today["speech_characters"]) == (len(segments), characters)
    assert today["estimated_cost_usd"] == str((characters * Decimal(15) / 1_000_000).quantize(Decimal("0.000001")))


async def test_a_period_with_an_unpriced_call_has_no_estimate(scripted_provider, settings, make_conversation, make_turns):
    settings.ELION_PRICE_TRANSCRIBE_AUDIO_INPUT_PER_MTOK = Decimal("6")
    settings.ELION_PRICE_TRANSCRIBE_OUTPUT_PER_MTOK = Decimal("10")
    client = AsyncClient()
    await transcribe(client, await create_conversation(client))
    conversation = await sync_to_async(make_conversation)()
    _, reply = await sync_to_async(make_turns)(conversation, ("user", "hi"), ("assistant", "Short reply."))
    assert (await client.get(f"/api/conversations/{conversation.id}/messages/{reply.id}/speech/")).status_code == 200

    today = await audio_today(client)
    assert (today["transcriptions"], today["speech_requests"], today["unpriced_calls"]) == (1, 1, 1)
    assert today["estimated_cost_usd"] is None  # speech has no price: never a partial sum


async def test_the_offline_demo_records_nothing(settings, make_conversation, make_turns):
    settings.OPENAI_API_KEY = None
    client = AsyncClient()
    await transcribe(client, await create_conversation(client))
    conversation = await sync_to_async(make_conversation)()
    _, reply = await sync_to_async(make_turns)(conversation, ("user", "hi"), ("assistant", "Short reply."))
    response = await client.get(f"/api/conversations/{conversation.id}/messages/{reply.id}/speech/")
    assert response["X-Elion-Demo"] == "true"
    assert await sync_to_async(AudioUsage.objects.count)() == 0
    body = (await client.get("/api/usage/")).json()
    assert body["audio"]["days"] == [] and body["audio"]["months"] == []


async def test_the_usage_page_shows_voice_beside_text_with_its_prices(scripted_provider, settings):
    settings.ELION_PRICE_TRANSCRIBE_PER_MINUTE = Decimal("0.006")
    client = AsyncClient()
    await transcribe(client, await create_conversation(client))
    html = (await client.get("/settings/usage/")).content.decode()
    assert "data-usage-audio" in html and "data-audio-usage-days" in html and "data-audio-usage-months" in html
    assert 'data-audio-usage="transcriptions">1<' in html
    assert "ELION_PRICE_TRANSCRIBE_PER_MINUTE" in html and "0.006" in html


def call(**fields) -> AudioCallRow:
    base = {"kind": AudioCall.TRANSCRIPTION, "seconds": None, "input_tokens": None, "input_audio_tokens": None,
            "input_text_tokens": None, "output_tokens": None, "characters": None}
    return AudioCallRow(**{**base, **fields})


async def test_the_price_rule_per_call(settings):
    settings.ELION_PRICE_TRANSCRIBE_AUDIO_INPUT_PER_MTOK = Decimal("6")
    settings.ELION_PRICE_TRANSCRIBE_TEXT_INPUT_PER_MTOK = Decimal("2.5")
    settings.ELION_PRICE_TRANSCRIBE_OUTPUT_PER_MTOK = Decimal("10")
    settings.ELION_PRICE_SPEECH_PER_MINUTE = Decimal("0.015")
    prices = configured_audio_prices()
    # Audio and text input at their own prices.
    split = call(input_tokens=100, input_audio_tokens=80, input_text_tokens=20, output_tokens=10)
    assert call_cost(split, prices) == Decimal(80 * 6 + 20 * Decimal("2.5") + 10 * 10) / 1_000_000
    # No split reported: every input token is audio. Text-input price unset: the audio-input price.
    assert call_cost(call(input_tokens=100, output_tokens=10), prices) == Decimal(100 * 6 + 10 * 10) / 1_000_000
    settings.ELION_PRICE_TRANSCRIBE_TEXT_INPUT_PER_MTOK = None
    assert call_cost(split, configured_audio_prices()) == Decimal(100 * 6 + 10 * 10) / 1_000_000
    # Without token prices, a token call is priced by its minutes; without that price, not at all.
    settings.ELION_PRICE_TRANSCRIBE_AUDIO_INPUT_PER_MTOK = None
    settings.ELION_PRICE_TRANSCRIBE_TEXT_INPUT_PER_MTOK = None
    no_token_prices = configured_audio_prices()
    assert call_cost(call(input_tokens=100, output_tokens=10, seconds=120.0), no_token_prices) is None
    settings.ELION_PRICE_TRANSCRIBE_PER_MINUTE = Decimal("0.006")
    assert call_cost(call(input_tokens=100, output_tokens=10, seconds=120.0), configured_audio_prices()) == Decimal(
        "0.012")
    # Speech: by the minute made when that price is set, else by characters, else none.
    speech = call(kind=AudioCall.SPEECH, seconds=30.0, characters=400)
    assert call_cost(speech, prices) == Decimal("0.0075")
    settings.ELION_PRICE_SPEECH_PER_MINUTE = None
    assert call_cost(speech, configured_audio_prices()) is None
    settings.ELION_PRICE_SPEECH_PER_MCHAR = Decimal("15")
    assert call_cost(speech, configured_audio_prices()) == Decimal("0.006")
