"""Speech to text and text to speech on a conversation's provider (issue 43, docs/voice.md).

Pure Python like the rest of the gateway: the caller passes the `ProviderConfig` its binding
check answered, so audio goes only where the conversation's replies go. Without an API key the
offline demo answers: a fixed sentence for a transcription, and for speech audio made on this
machine (Debian's `espeak-ng` when installed, else a short tone), each marked `demo`.
"""

from __future__ import annotations

import asyncio
import functools
import io
import math
import shutil
import struct
import subprocess
import typing
import wave
from collections.abc import AsyncIterator
from dataclasses import dataclass

import openai

from transcript.provider.config import ProviderConfig
from transcript.provider.errors import provider_error_from
from transcript.provider.events import ProviderError
from transcript.provider.request_builder import provider_call, speech_request, transcription_request

DEMO_TRANSCRIPT = "(Offline demo: no OPENAI_API_KEY is set, so this sentence stands in for what you said.)"
# Models that do not stream a transcription (the SDK: "Streaming is not supported for the `whisper-1` model").
NON_STREAMING_TRANSCRIBE_MODELS = frozenset({"whisper-1"})
# The speech API's input limit (characters) per request; longer text is split on sentence boundaries.
SPEECH_INPUT_LIMIT = 4096


@dataclass(frozen=True)
class TranscriptDelta:
    text: str


@dataclass(frozen=True)
class TranscriptDone:
    text: str
    # What the provider reported: seconds of audio (whisper-1) or tokens (gpt-4o-*), when it did.
    seconds: float | None = None
    input_tokens: int | None = None
    input_audio_tokens: int | None = None
    input_text_tokens: int | None = None
    output_tokens: int | None = None
    demo: bool = False


TranscriptEvent = TranscriptDelta | TranscriptDone


@functools.cache
def sdk_voices() -> tuple[str, ...]:
    """The built-in voices the installed `openai` package lists for `audio.speech.create`."""
    from openai.types.audio.speech_create_params import SpeechCreateParams

    hints = typing.get_type_hints(SpeechCreateParams, include_extras=True)
    found: list[str] = []

    def walk(tp: object) -> None:
        origin = typing.get_origin(tp)
        if origin is typing.Literal:
            found.extend(str(v) for v in typing.get_args(tp) if isinstance(v, str))
        else:
            for arg in typing.get_args(tp):
                walk(arg)

    walk(hints["voice"])
    return tuple(dict.fromkeys(found))


async def transcribe(
    config: ProviderConfig, *, data: bytes, filename: str, mime: str, model: str, language: str | None
) -> AsyncIterator[TranscriptEvent]:
    """The words of one recording: deltas as the model streams them (where it can), then the whole text.

    Raises ProviderError on any failure, before or during the stream.
    """
    if not config.api_key:
        for piece in DEMO_TRANSCRIPT.split(" "):
            await asyncio.sleep(0)
            yield TranscriptDelta(piece + " ")
        yield TranscriptDone(DEMO_TRANSCRIPT, demo=True)
        return
    streams = model not in NON_STREAMING_TRANSCRIBE_MODELS
    request = transcription_request(data=data, filename=filename, mime=mime, model=model, language=language, stream=streams)
    try:
        if not streams:
            answer = await provider_call(config, request)
            yield _done(answer.text, getattr(answer, "usage", None))
            return
        stream = await provider_call(config, request)
        async for event in stream:
            if event.type == "transcript.text.delta":
                yield TranscriptDelta(event.delta)
            elif event.type == "transcript.text.done":
                yield _done(event.text, event.usage)
                return
    except openai.APIError as exc:
        raise provider_error_from(exc, config.api_key) from exc
    raise ProviderError("provider_connection_lost", "The transcription stream ended before its text was done.")


def _done(text: str, usage: object) -> TranscriptDone:
    kind = getattr(usage, "type", None)
    if kind == "duration":
        return TranscriptDone(text, seconds=float(usage.seconds))  # type: ignore[union-attr]
    if kind == "tokens":
        details = getattr(usage, "input_token_details", None)
        return TranscriptDone(
            text, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,  # type: ignore[union-attr]
            input_audio_tokens=getattr(details, "audio_tokens", None),
            input_text_tokens=getattr(details, "text_tokens", None),
        )
    return TranscriptDone(text)


@dataclass(frozen=True)
class Speech:
    audio: bytes
    mime: str
    demo: bool = False


SPEECH_MIMES = {"mp3": "audio/mpeg", "opus": "audio/ogg", "wav": "audio/wav", "aac": "audio/aac", "flac": "audio/flac"}


async def speak(
    config: ProviderConfig, *, text: str, model: str, voice: str, instructions: str, response_format: str = "mp3"
) -> Speech:
    """One piece of speech (at most SPEECH_INPUT_LIMIT characters); raises ProviderError on any failure."""
    if not config.api_key:
        return Speech(await asyncio.to_thread(demo_speech_wav, text), "audio/wav", demo=True)
    request = speech_request(
        text=text[:SPEECH_INPUT_LIMIT], model=model, voice=voice, instructions=instructions, response_format=response_format
    )
    try:
        answer = await provider_call(config, request)
        audio = await answer.aread()
    except openai.APIError as exc:
        raise provider_error_from(exc, config.api_key) from exc
    if not audio:
        raise ProviderError("provider_http_error", "The model provider answered without audio.")
    return Speech(audio, SPEECH_MIMES.get(response_format, "application/octet-stream"))


def demo_speech_wav(text: str) -> bytes:
    """Offline demo speech: `espeak-ng` reading the text when it is installed, else a short tone."""
    espeak = shutil.which("espeak-ng")
    if espeak:
        done = subprocess.run(  # noqa: S603 - fixed binary, text passed on stdin, never a shell
            [espeak, "--stdout", "--stdin"], input=text[:SPEECH_INPUT_LIMIT].encode(), capture_output=True, timeout=60,
            check=False,
        )
        if done.returncode == 0 and done.stdout.startswith(b"RIFF"):
            return done.stdout
    return tone_wav(seconds=0.6)


def tone_wav(*, seconds: float, frequency: float = 440.0, rate: int = 16_000, amplitude: float = 0.3) -> bytes:
    """A mono 16-bit WAV of one sine tone (stdlib only)."""
    frames = int(seconds * rate)
    samples = (int(amplitude * 32767 * math.sin(2 * math.pi * frequency * n / rate)) for n in range(frames))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(struct.pack("<h", s) for s in samples))
    return buffer.getvalue()
