"""The scripted provider's audio endpoints (issue 43): `POST /v1/audio/transcriptions` and `/v1/audio/speech`.

As OpenAI documents them and as the installed `openai` package types them:

* a transcription is a multipart form (`file`, `model`, optional `language`, `stream`, …), checked
  against `TranscriptionCreateParamsStreaming` / `…NonStreaming` (tests/support/wire_contract.py); it
  answers `{"text", "usage"}` as JSON, or with `stream=true` an SSE stream of `transcript.text.delta`
  events and one `transcript.text.done`, each built from the SDK's own event models;
* speech is a JSON body checked against `SpeechCreateParams`, answered with real audio bytes: a WAV
  (a tone whose length follows the input, or the bytes a test scripted) with its content type.

Scripts are queued like replies (`ScriptedProvider.script_transcriptions` / `script_speech`); an
unscripted request gets the default answer.
"""

from __future__ import annotations

import io
import math
import struct
import wave
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from tests.support.wire_contract import audio_event

DEFAULT_TRANSCRIPT = "Hello Elion, this is a scripted transcription."


@dataclass
class ScriptedTranscription:
    """One answer of `POST /v1/audio/transcriptions`."""

    text: str = DEFAULT_TRANSCRIPT
    chunks: list[str] | None = None  # the streamed deltas; None → word-sized pieces of `text`
    status: int = 200  # >= 400 → an OpenAI-style error body with this status
    error_message: str | None = None
    delay_before_first: float = 0.0
    delay_between_chunks: float = 0.0
    drop_after_chunks: int | None = None  # stream N deltas, then cut the connection
    # The JSON answer's `usage`: None → tokens, as the gpt-4o transcribe models report it; whisper-1
    # reports `{"type": "duration", "seconds": …}`.
    usage: dict[str, Any] | None = None

    def pieces(self) -> list[str]:
        if self.chunks is not None:
            return list(self.chunks)
        words = self.text.split(" ")
        return [w if i == 0 else " " + w for i, w in enumerate(words)]


@dataclass
class ScriptedSpeech:
    """One answer of `POST /v1/audio/speech`."""

    audio: bytes | None = None  # None → a WAV tone whose length follows the input
    content_type: str = "audio/wav"
    status: int = 200
    error_message: str | None = None
    delay_before_first: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class UploadedFile:
    filename: str
    content_type: str
    data: bytes


def multipart_fields(content_type: str, raw: bytes) -> dict[str, Any]:
    """A multipart/form-data body as {name: str | UploadedFile | [str, …]} (`name[]` fields as lists)."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    fields: dict[str, Any] = {}
    if not message.is_multipart():
        return fields
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not name:
            continue
        payload = part.get_payload(decode=True) or b""
        filename = part.get_filename()
        value: Any = (
            UploadedFile(filename, part.get_content_type(), payload) if filename is not None
            else payload.decode("utf-8", "replace")
        )
        if name.endswith("[]"):
            fields.setdefault(name[:-2], []).append(value)
        else:
            fields[name] = value
    return fields


def transcription_params(fields: dict[str, Any]) -> dict[str, Any]:
    """The form's fields as the JSON the SDK's TypedDicts describe (what the SDK encoded into the form)."""
    params: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, UploadedFile):
            params[name] = "<file>"  # the TypedDict's `FileTypes` takes bytes-like inputs the walk cannot break
        elif name == "stream":
            params[name] = {"true": True, "false": False}.get(value, value)
        elif name == "temperature":
            try:
                params[name] = float(value)
            except ValueError:
                params[name] = value
        else:
            params[name] = value
    return params


def recorded_form(fields: dict[str, Any]) -> dict[str, Any]:
    """What the request log keeps of a form: the fields, and each file as its name, type and size."""
    return {
        name: {"filename": v.filename, "content_type": v.content_type, "size": len(v.data)}
        if isinstance(v, UploadedFile) else v
        for name, v in fields.items()
    }


def transcription_json(text: str, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A non-streamed `Transcription` (json), with token usage as the gpt-4o transcribe models report it
    (or the scripted usage)."""
    return {"text": text, "usage": usage or _token_usage(text)}


def _token_usage(text: str) -> dict[str, Any]:
    output = max(1, len(text.split()))
    return {"type": "tokens", "input_tokens": 40, "output_tokens": output, "total_tokens": 40 + output,
            "input_token_details": {"audio_tokens": 40, "text_tokens": 0}}


def transcription_delta(delta: str) -> dict[str, Any]:
    return audio_event({"type": "transcript.text.delta", "delta": delta})


def transcription_done(text: str) -> dict[str, Any]:
    return audio_event({"type": "transcript.text.done", "text": text, "usage": _token_usage(text)})


def tone_wav(seconds: float, frequency: float = 330.0, rate: int = 24_000) -> bytes:
    """A mono 16-bit WAV of one tone: real audio a browser plays."""
    frames = max(1, int(seconds * rate))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"".join(
            struct.pack("<h", int(9000 * math.sin(2 * math.pi * frequency * n / rate))) for n in range(frames)
        ))
    return buffer.getvalue()


def speech_audio(body: dict[str, Any], scripted: ScriptedSpeech) -> tuple[bytes, str]:
    """The audio of one speech answer: the scripted bytes, or a tone about as long as the words would take."""
    if scripted.audio is not None:
        return scripted.audio, scripted.content_type
    words = len(str(body.get("input") or "").split())
    return tone_wav(min(4.0, 0.15 + 0.05 * words)), "audio/wav"
