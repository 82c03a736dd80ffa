"""Transcribing one recording (`POST /api/transcriptions/`): the recording checked, the provider chosen
by the conversation's binding, the words streamed back, and the recording kept only when the owner
asked for it.

Two steps, as a send is: `transcription_prepare` (sync: reads the upload, checks it and decides the
provider; every refusal is a 4xx before any audio leaves the machine) and `transcription_events`
(async: the provider call, as `delta` and `done` events, or one `error`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from uuid import UUID

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from conversations.services.voice.binding import voice_provider
from conversations.services.voice.usage import transcription_usage_record
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import InvalidInput, ServiceError
from elion.base.uploads import size_text
from transcript.access import access_conversation
from transcript.attachments.audio import audio_extension, audio_mime, voice_recording_store, wav_seconds
from transcript.attachments.manifests import attachment_repr
from transcript.provider.audio import TranscriptDelta, TranscriptDone, transcribe
from transcript.provider.binding import configured_provider
from transcript.provider.config import ProviderConfig
from transcript.provider.events import ProviderError

# ISO-639-1 (two letters); a few providers take ISO-639-3 too.
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


class RecordingTooLarge(ServiceError):
    status = 413
    code = "audio_too_large"


@dataclass(frozen=True)
class PreparedTranscription:
    config: ProviderConfig
    model: str
    data: bytes
    mime: str
    language: str | None
    seconds: float | None
    keep: bool
    conversation_id: UUID | None


def recording_too_large() -> RecordingTooLarge:
    return RecordingTooLarge(
        f"The recording is larger than the limit of {size_text(settings.ELION_VOICE_MAX_BYTES)}; "
        "record a shorter message."
    )


def _too_long(seconds: float) -> RecordingTooLarge:
    limit = settings.ELION_VOICE_MAX_SECONDS
    return RecordingTooLarge(
        f"The recording is {seconds:.0f} seconds long; a recording can be at most {limit // 60} minutes "
        f"({limit} seconds).", code="audio_too_long",
    )


def _language(raw: object) -> str | None:
    if raw in (None, ""):
        stored = assistant_settings_read().voice_language
        return stored or None
    text = str(raw).strip().lower()
    if not _LANGUAGE.match(text):
        raise InvalidInput("language must be an ISO-639-1 code such as `en` or `de`.", code="invalid_language")
    return text


def _declared_seconds(raw: object) -> float | None:
    if raw in (None, ""):
        return None
    try:
        seconds = float(str(raw))
    except ValueError:
        raise InvalidInput("duration_seconds must be a number of seconds.", code="invalid_duration") from None
    if not (seconds >= 0 and seconds != float("inf")):
        raise InvalidInput("duration_seconds must be a number of seconds.", code="invalid_duration")
    return seconds


def transcription_prepare(
    *, upload: UploadedFile | None, conversation_id: object = None, language: object = None,
    duration_seconds: object = None,
) -> PreparedTranscription:
    """Check one recording and choose its provider; every refusal here is before any provider I/O.

    With `conversation_id`, the conversation's recorded provider binding must match the configured
    provider (a drifted binding is a 409 and no audio leaves the machine).
    """
    if upload is None:
        raise InvalidInput("Send the recording as multipart field `file`.", code="file_required")
    limit = settings.ELION_VOICE_MAX_BYTES
    try:
        if upload.size is not None and upload.size > limit:
            raise recording_too_large()
        upload.seek(0)
        data = upload.read(limit + 1)  # the declared size is not trusted
    finally:
        upload.close()
    if len(data) > limit:
        raise recording_too_large()
    if not data:
        raise InvalidInput("The recording is empty: nothing was heard. Try again.", code="empty_audio")
    mime = audio_mime(data)
    if mime is None:
        raise InvalidInput(
            "That file is not a recording Elion can transcribe (WebM, Ogg, WAV, FLAC, MP3 or M4A audio).",
            code="unsupported_audio",
        )
    declared = _declared_seconds(duration_seconds)
    seconds = wav_seconds(data) if mime == "audio/wav" else None
    seconds = seconds if seconds is not None else declared
    if seconds is not None and seconds > settings.ELION_VOICE_MAX_SECONDS:
        raise _too_long(seconds)
    if mime == "audio/wav" and seconds == 0:
        raise InvalidInput("The recording is empty: nothing was heard. Try again.", code="empty_audio")
    spoken_language = _language(language)
    if conversation_id not in (None, ""):
        conversation = access_conversation(conversation_id)
        config = voice_provider(conversation.id)
        scope: UUID | None = conversation.id
    else:
        config, scope = configured_provider(), None
    return PreparedTranscription(
        config=config, model=settings.ELION_TRANSCRIBE_MODEL, data=data, mime=mime, language=spoken_language,
        seconds=seconds, keep=assistant_settings_read().keep_voice_recordings, conversation_id=scope,
    )


def provider_failure(exc: ProviderError) -> ServiceError:
    return ServiceError(f"The recording could not be transcribed. {exc.detail}", code="provider_error", status=502)


async def transcription_events(prepared: PreparedTranscription) -> AsyncIterator[tuple[str, dict]]:
    """`delta` {text} while the model streams, then `done` {text, model, duration_seconds, demo, attachment};
    or one `error` {error, detail} (nothing is kept then)."""
    try:
        async for event in transcribe(
            prepared.config, data=prepared.data, filename=f"recording.{audio_extension(prepared.mime)}",
            mime=prepared.mime, model=prepared.model, language=prepared.language,
        ):
            if isinstance(event, TranscriptDelta):
                if event.text:
                    yield "delta", {"text": event.text}
            elif isinstance(event, TranscriptDone):
                yield "done", await _done(prepared, event)
                return
    except ProviderError as exc:
        yield "error", provider_failure(exc).as_dict()


async def _done(prepared: PreparedTranscription, event: TranscriptDone) -> dict:
    await sync_to_async(transcription_usage_record)(model=prepared.model, done=event, recording_seconds=prepared.seconds)
    attachment = None
    if prepared.keep and event.text.strip():
        stored = await sync_to_async(voice_recording_store)(
            data=prepared.data, mime=prepared.mime, scope_conversation_id=prepared.conversation_id
        )
        attachment = attachment_repr(stored)
    seconds = prepared.seconds if prepared.seconds is not None else event.seconds
    return {
        "text": event.text.strip(),
        "model": "offline-demo" if event.demo else prepared.model,
        "duration_seconds": round(seconds, 3) if seconds is not None else None,
        "demo": event.demo,
        "attachment": attachment,
    }
