"""`POST /api/transcriptions/` (issue 43, dictation): the contract and its errors, through the real
openai SDK to the scripted provider, whose recorded multipart request is checked against the SDK's types.

A recording is transcribed on the conversation's own provider binding; its words come back for the
composer and write no turn; a kept recording is an ordinary upload the send commits to the user turn.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient

from elion.base.request_bounds import MULTIPART_OVERHEAD, body_limit, early_refusal
from elion.models import AssistantSettings
from tests.conftest import parse_sse, read_streaming
from tests.support.scripted_audio import ScriptedTranscription, tone_wav
from tests.support.sending import create_conversation, send_sse
from tests.support.voice_files import spoken_wav
from transcript.models import Attachment, AttachmentKind, Message, MessageAttachment, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

TRANSCRIPTIONS = "/api/transcriptions/"


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path):
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"


def recording(data: bytes | None = None, name: str = "recording.wav") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, spoken_wav() if data is None else data, content_type="audio/wav")


async def transcribe(client: AsyncClient, data: bytes | None = None, **fields):
    return await client.post(TRANSCRIPTIONS, {"file": recording(data), **fields})


def transcription_requests(provider):
    return provider.requests_to("/v1/audio/transcriptions")


@sync_to_async
def settings_set(**fields) -> None:
    AssistantSettings.objects.update_or_create(pk=1, defaults=fields)


async def test_a_recording_is_transcribed_by_the_configured_model_and_writes_no_turn(scripted_provider):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    scripted_provider.script_transcriptions(ScriptedTranscription(text="Water the plants tomorrow."))

    response = await transcribe(client, conversation_id=conversation_id)

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["text"] == "Water the plants tomorrow."
    assert body["model"] == "gpt-4o-transcribe"
    assert body["demo"] is False
    assert body["duration_seconds"] > 0  # read from the WAV header
    assert body["attachment"] is None  # "Keep voice recordings" is off by default
    (request,) = transcription_requests(scripted_provider)
    assert request.body["model"] == "gpt-4o-transcribe"
    assert request.body["stream"] == "true"
    assert request.body["file"]["content_type"] == "audio/wav"
    assert request.body["file"]["size"] == len(spoken_wav())
    assert "language" not in request.body
    assert await sync_to_async(Message.objects.filter(conversation_id=conversation_id).count)() == 0
    assert await sync_to_async(Attachment.objects.count)() == 0


async def test_partial_text_streams_as_the_model_writes_it(scripted_provider):
    scripted_provider.script_transcriptions(ScriptedTranscription(chunks=["Water", " the", " plants."],
                                                                  text="Water the plants."))
    response = await AsyncClient().post(TRANSCRIPTIONS, {"file": recording()}, headers={"Accept": "text/event-stream"})

    assert response.status_code == 200
    events = parse_sse(await read_streaming(response))
    assert [name for name, _ in events] == ["delta", "delta", "delta", "done"]
    assert "".join(data["text"] for name, data in events if name == "delta") == "Water the plants."
    assert events[-1][1]["text"] == "Water the plants."


async def test_the_owners_language_setting_is_sent_and_a_request_field_wins(scripted_provider):
    await settings_set(voice_language="de")
    await transcribe(AsyncClient())
    await transcribe(AsyncClient(), language="FR")
    first, second = transcription_requests(scripted_provider)
    assert first.body["language"] == "de"
    assert second.body["language"] == "fr"


async def test_a_model_that_cannot_stream_is_asked_without_stream(scripted_provider, settings):
    settings.ELION_TRANSCRIBE_MODEL = "whisper-1"
    response = await transcribe(AsyncClient())
    assert response.status_code == 200
    assert response.json()["model"] == "whisper-1"
    (request,) = transcription_requests(scripted_provider)
    assert "stream" not in request.body


@pytest.mark.parametrize(
    ("data", "code"),
    [(b"", "empty_audio"), (b"Dear diary, this is text.", "unsupported_audio"), (b"\x89PNG\r\n\x1a\n0000", "unsupported_audio")],
)
async def test_empty_or_non_audio_is_a_400_with_a_sentence_and_no_provider_request(scripted_provider, data, code):
    response = await transcribe(AsyncClient(), data)
    assert response.status_code == 400
    assert response.json()["error"] == code
    assert response.json()["detail"].endswith(".")
    assert transcription_requests(scripted_provider) == []


async def test_a_wav_of_no_samples_is_empty(scripted_provider):
    response = await transcribe(AsyncClient(), tone_wav(0.0)[:44])
    assert response.status_code == 400
    assert response.json()["error"] == "empty_audio"


async def test_bad_fields_are_400s(scripted_provider):
    client = AsyncClient()
    assert (await transcribe(client, language="english!")).json()["error"] == "invalid_language"
    assert (await transcribe(client, duration_seconds="soon")).json()["error"] == "invalid_duration"
    no_file = await client.post(TRANSCRIPTIONS, {"language": "en"})
    assert (no_file.status_code, no_file.json()["error"]) == (400, "file_required")
    as_json = await client.post(TRANSCRIPTIONS, {"file": "x"}, content_type="application/json")
    assert (as_json.status_code, as_json.json()["error"]) == (400, "file_required")
    unknown = await transcribe(client, conversation_id="not-a-conversation")
    assert unknown.status_code == 404
    assert transcription_requests(scripted_provider) == []


async def test_a_recording_over_25_mib_is_refused_before_its_body_is_read(settings):
    limit = settings.ELION_VOICE_MAX_BYTES
    assert limit == 25 * 1024 * 1024
    assert body_limit(TRANSCRIPTIONS) == limit + MULTIPART_OVERHEAD
    refusal = early_refusal(TRANSCRIPTIONS, [], limit + MULTIPART_OVERHEAD + 1, chunked=False)
    assert refusal is not None and refusal.status == 413


async def test_over_the_limit_by_its_size_or_its_length_is_a_413(scripted_provider, settings):
    settings.ELION_VOICE_MAX_BYTES = 1000
    too_big = await transcribe(AsyncClient(), tone_wav(1.0))
    assert (too_big.status_code, too_big.json()["error"]) == (413, "audio_too_large")
    settings.ELION_VOICE_MAX_BYTES = 25 * 1024 * 1024
    settings.ELION_VOICE_MAX_SECONDS = 1
    too_long = await transcribe(AsyncClient(), tone_wav(1.5))
    assert (too_long.status_code, too_long.json()["error"]) == (413, "audio_too_long")
    declared = await transcribe(AsyncClient(), b"\x1a\x45\xdf\xa3" + b"\x00" * 64, duration_seconds="61")
    assert (declared.status_code, declared.json()["error"]) == (413, "audio_too_long")
    assert transcription_requests(scripted_provider) == []


@pytest.mark.parametrize("stream", [False, True])
async def test_a_provider_error_is_a_502_with_a_sentence(scripted_provider, stream):
    scripted_provider.script_transcriptions(ScriptedTranscription(status=500, error_message="upstream broke"))
    headers = {"Accept": "text/event-stream"} if stream else {}
    response = await AsyncClient().post(TRANSCRIPTIONS, {"file": recording()}, headers=headers)
    assert response.status_code == 502
    assert response.json()["error"] == "provider_error"
    assert response.json()["detail"].startswith("The recording could not be transcribed.")


async def test_a_stream_cut_midway_ends_with_an_error_event(scripted_provider):
    scripted_provider.script_transcriptions(ScriptedTranscription(text="one two three four", drop_after_chunks=2))
    response = await AsyncClient().post(TRANSCRIPTIONS, {"file": recording()}, headers={"Accept": "text/event-stream"})
    events = parse_sse(await read_streaming(response))
    assert [name for name, _ in events] == ["delta", "delta", "error"]
    assert events[-1][1]["error"] == "provider_error"


async def test_a_drifted_binding_fails_closed_before_any_audio_leaves(scripted_provider, settings):
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    await send_sse(client, conversation_id, content="hello")
    settings.ELION_MODEL = "gpt-5.5-mini"  # the conversation is bound to gpt-5.5

    response = await transcribe(client, conversation_id=conversation_id)

    assert response.status_code == 409
    assert response.json()["error"] == "provider_mismatch"
    assert transcription_requests(scripted_provider) == []


async def test_without_a_key_the_demo_answers_and_says_so(settings):
    settings.OPENAI_API_KEY = None
    response = await transcribe(AsyncClient())
    assert response.status_code == 200
    body = response.json()
    assert body["demo"] is True
    assert body["model"] == "offline-demo"
    assert "Offline demo" in body["text"]


async def test_a_kept_recording_becomes_an_attachment_of_the_user_turn_and_the_model_reads_its_words(
    scripted_provider,
):
    await settings_set(keep_voice_recordings=True)
    client = AsyncClient()
    conversation_id = await create_conversation(client)
    scripted_provider.script_transcriptions(ScriptedTranscription(text="Water the plants."))

    body = (await transcribe(client, conversation_id=conversation_id)).json()

    kept = body["attachment"]
    assert kept["name"] == "voice-recording.wav"
    events = await send_sse(client, conversation_id, content=body["text"], attachment_ids=[kept["id"]])
    assert events[-1][0] == "done"
    user = await sync_to_async(Message.objects.get)(conversation_id=conversation_id, role=Role.USER)
    entry = await sync_to_async(MessageAttachment.objects.select_related("attachment").get)(message=user)
    assert entry.attachment.kind == AttachmentKind.AUDIO
    assert entry.attachment.sha256 and entry.attachment.size == len(spoken_wav())
    sent = scripted_provider.requests_to("/v1/responses")[-1].body
    user_items = [item for item in sent["input"] if item.get("role") == "user"]
    parts = user_items[-1]["content"]
    texts = [part.get("text", "") for part in parts]
    assert "Water the plants." in texts
    assert any("Voice recording" in text for text in texts)
    assert all(part["type"] == "input_text" for part in parts)  # never the sound itself
    download = await client.get(f"/api/conversations/{conversation_id}/attachments/{kept['id']}/")
    assert download.status_code == 200
    assert download.content == spoken_wav()


async def test_a_failed_transcription_keeps_nothing(scripted_provider):
    await settings_set(keep_voice_recordings=True)
    scripted_provider.script_transcriptions(ScriptedTranscription(status=500))
    assert (await transcribe(AsyncClient())).status_code == 502
    assert await sync_to_async(Attachment.objects.count)() == 0
