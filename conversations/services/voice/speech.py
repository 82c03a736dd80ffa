"""Read aloud: a reply's speech, made once per segment and kept (issue 43, docs/voice.md).

`speech_plan` (sync) turns a settled reply into its spoken segments (`speech_text`) and each segment's
key: the sha256 of its text, the voice, the model, the owner's instructions and the format. A segment
with a stored row is read back from its verified blob and costs no provider request, after a restart
too; one without is made on the conversation's own provider binding (a drift is a 409 before any text
leaves), written as a content-addressed blob in the conversation's store, then recorded.
"""

from __future__ import annotations

import hashlib
import io
import json
import wave
from dataclasses import dataclass
from uuid import UUID

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone

from conversations.services.voice.binding import voice_provider, voice_provider_configured
from conversations.services.voice.settings import voice_settings_check
from conversations.services.voice.speech_text import speech_segments, speech_text
from conversations.services.voice.usage import speech_usage_record
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import Conflict, NotFound, ServiceError
from transcript.access import access_conversation, message_in_conversation
from transcript.attachments import store
from transcript.models import Message, MessageSpeech, MessageStatus, Role
from transcript.provider.audio import speak
from transcript.provider.events import ProviderError

SPEECH_FORMAT = "wav"  # the SDK: WAV is uncompressed, for low-latency playback without decoding


@dataclass(frozen=True)
class SpeechPlan:
    conversation_id: UUID
    message_id: UUID
    segments: tuple[str, ...]
    keys: tuple[str, ...]
    voice: str
    model: str
    instructions: str
    complete: bool = True  # False: the reply is still streaming, more segments may follow


@dataclass(frozen=True)
class SpokenSegment:
    audio: bytes
    mime: str
    sha256: str
    demo: bool


def _unavailable(detail: str) -> Conflict:
    return Conflict(detail, code="speech_unavailable")


def speech_key(*, text: str, voice: str, model: str, instructions: str, audio_format: str = SPEECH_FORMAT) -> str:
    return hashlib.sha256(json.dumps([text, voice, model, instructions, audio_format]).encode()).hexdigest()


def speech_plan(
    *, conversation_id: object, message_id: object, voice: str | None = None, while_streaming: bool = False,
) -> SpeechPlan:
    """A reply's spoken segments and their keys; 404 for an unknown id, 409 when there is nothing to say.

    `while_streaming`: a reply still being written gives the segments its stored text has finished so far
    (`speech_segments(finished=False)`, possibly none yet; `complete` is False): the same segments, with
    the same keys, as the settled reply's first ones. Otherwise a streaming reply is a 409.
    """
    conversation = access_conversation(conversation_id)
    message = message_in_conversation(conversation, message_id)
    if message.role != Role.ASSISTANT:
        raise _unavailable("Only Elion's replies are read aloud.")
    streaming = message.status == MessageStatus.STREAMING
    if streaming and not while_streaming:
        raise _unavailable("This reply is still being written; it can be read aloud once it is done.")
    segments = tuple(speech_segments(speech_text(message.content or ""), finished=not streaming))
    if not segments and not streaming:
        raise _unavailable("This reply has no text to read aloud.")
    if voice:
        voice_settings_check({"voice": voice})  # 400 `invalid_voice` before anything is made
    row = assistant_settings_read()
    chosen = voice or row.voice
    model = settings.ELION_SPEECH_MODEL
    keys = tuple(
        speech_key(text=segment, voice=chosen, model=model, instructions=row.voice_instructions) for segment in segments
    )
    return SpeechPlan(conversation.id, message.id, segments, keys, chosen, model, row.voice_instructions,
                      complete=not streaming)


def _segment_index(plan: SpeechPlan, raw: object) -> int:
    try:
        index = int(str(raw))
    except ValueError:
        raise NotFound("No such segment of this reply's speech.", code="speech_segment_not_found") from None
    if not 0 <= index < len(plan.segments):
        raise NotFound("No such segment of this reply's speech.", code="speech_segment_not_found")
    return index


def _stored(plan: SpeechPlan, index: int) -> SpokenSegment | None:
    row = MessageSpeech.objects.filter(message_id=plan.message_id, key=plan.keys[index]).first()
    if row is None:
        return None
    try:
        audio = store.read_verified(store.conversation_store(plan.conversation_id), row.sha256, row.size)
    except store.BlobProblem:
        row.delete()  # a missing or changed blob is made again, never played
        return None
    return SpokenSegment(audio, row.mime, row.sha256, row.demo)


def _record(plan: SpeechPlan, index: int, audio: bytes, mime: str, demo: bool) -> SpokenSegment:
    sha = hashlib.sha256(audio).hexdigest()
    store.write_bytes(store.conversation_store(plan.conversation_id), audio, sha)  # the blob before the row naming it
    # Two requests making the same segment at once: get_or_create keeps the first row (the unique key).
    MessageSpeech.objects.get_or_create(
        message_id=plan.message_id, key=plan.keys[index],
        defaults={"conversation_id": plan.conversation_id, "sha256": sha, "size": len(audio), "mime": mime,
                  "voice": plan.voice, "model": plan.model, "demo": demo},
    )
    speech_usage_record(model=plan.model, text=plan.segments[index], audio=audio, demo=demo)
    # The reply's voice mark: its first speech made (one column, so no write of the run's can undo it).
    Message.objects.filter(pk=plan.message_id, read_aloud_at__isnull=True).update(read_aloud_at=timezone.now())
    return SpokenSegment(audio, mime, sha, demo)


async def speech_segment(plan: SpeechPlan, raw_index: object) -> SpokenSegment:
    """One segment's audio: stored, or made now on the conversation's binding and kept."""
    index = _segment_index(plan, raw_index)
    stored = await sync_to_async(_stored)(plan, index)
    if stored is not None:
        return stored
    config = await sync_to_async(voice_provider)(plan.conversation_id)
    try:
        speech = await speak(config, text=plan.segments[index], model=plan.model, voice=plan.voice,
                             instructions=plan.instructions, response_format=SPEECH_FORMAT)
    except ProviderError as exc:
        raise ServiceError(f"The reply could not be read aloud. {exc.detail}", code="provider_error", status=502) from exc
    return await sync_to_async(_record)(plan, index, speech.audio, speech.mime, speech.demo)


async def speech_whole(plan: SpeechPlan) -> SpokenSegment:
    """The whole reply as one WAV: every segment (stored or made now) joined in order."""
    parts = [await speech_segment(plan, index) for index in range(len(plan.segments))]
    if len(parts) == 1:
        return parts[0]
    audio = wav_join([p.audio for p in parts])
    tag = hashlib.sha256("".join(p.sha256 for p in parts).encode()).hexdigest()
    return SpokenSegment(audio, "audio/wav", tag, any(p.demo for p in parts))


def wav_join(wavs: list[bytes]) -> bytes:
    """WAVs as one WAV of the first one's format, their frames in order. A part in another format or
    unreadable is left out (the segments of one reply come from one provider, in one format)."""
    frames: list[bytes] = []
    params = None
    for data in wavs:
        try:
            with wave.open(io.BytesIO(data)) as part:
                if params is None:
                    params = part.getparams()
                elif (part.getnchannels(), part.getsampwidth(), part.getframerate()) != (
                    params.nchannels, params.sampwidth, params.framerate
                ):
                    continue
                frames.append(part.readframes(part.getnframes()))
        except (wave.Error, EOFError):
            continue
    out = io.BytesIO()
    with wave.open(out, "wb") as joined:
        if params is None:
            joined.setnchannels(1)
            joined.setsampwidth(2)
            joined.setframerate(24_000)
        else:
            joined.setnchannels(params.nchannels)
            joined.setsampwidth(params.sampwidth)
            joined.setframerate(params.framerate)
        joined.writeframes(b"".join(frames))
    return out.getvalue()


PREVIEW_SENTENCE = "Hello, I'm Elion. This is how I sound when I read a reply aloud."


async def voice_preview(voice: str) -> SpokenSegment:
    """A short sample in `voice` with the owner's instructions, made once and kept on disk (Settings)."""
    voice_settings_check({"voice": voice})
    row = await sync_to_async(assistant_settings_read)()
    model = settings.ELION_SPEECH_MODEL
    key = speech_key(text=PREVIEW_SENTENCE, voice=voice, model=model, instructions=row.voice_instructions)
    previews = store.root() / "voice-previews"
    try:
        kept = store.read_identified(previews, key).data
        return SpokenSegment(kept, "audio/wav", key, False)
    except store.BlobProblem:
        pass
    config = await sync_to_async(voice_provider_configured)()
    try:
        speech = await speak(config, text=PREVIEW_SENTENCE, model=model, voice=voice,
                             instructions=row.voice_instructions, response_format=SPEECH_FORMAT)
    except ProviderError as exc:
        raise ServiceError(f"The voice could not be previewed. {exc.detail}", code="provider_error", status=502) from exc
    if not speech.demo:
        await sync_to_async(store.write_bytes)(previews, speech.audio, key)
        await sync_to_async(speech_usage_record)(model=model, text=PREVIEW_SENTENCE, audio=speech.audio, demo=False)
    return SpokenSegment(speech.audio, speech.mime, key, speech.demo)
