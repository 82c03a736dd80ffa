"""Voice recordings: audio recognised by its bytes, its length read where the container says it, and a
recording the owner keeps stored as a content-addressed attachment like any upload (seed 004; issue 43).

A kept recording is an ordinary unattached upload of kind `audio`: the composer lists it beside the
words it was transcribed into, and the send that carries it commits it to the user turn's manifest,
verified like every blob. It is never sent to the model as sound: its words are the message's text
(`transcript.attachments.projection`).
"""

from __future__ import annotations

import hashlib
import struct
from uuid import UUID

from transcript.attachments import store
from transcript.models import Attachment, AttachmentKind

# Containers the transcription API takes (flac, mp3, mp4/m4a, ogg, wav, webm), by their magic bytes:
# the client's declared content type is never trusted.
_EXTENSIONS = {"audio/webm": "webm", "audio/ogg": "ogg", "audio/wav": "wav", "audio/flac": "flac",
               "audio/mpeg": "mp3", "audio/mp4": "m4a"}


def audio_mime(data: bytes) -> str | None:
    """The audio container of `data` by its first bytes, or None when it is not one the API takes."""
    if data.startswith(b"\x1a\x45\xdf\xa3"):
        return "audio/webm"  # EBML: WebM / Matroska, what Chromium's MediaRecorder writes
    if data.startswith(b"OggS"):
        return "audio/ogg"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data.startswith(b"fLaC"):
        return "audio/flac"
    if data.startswith(b"ID3") or (len(data) > 1 and data[0] == 0xFF and data[1] & 0xE0 == 0xE0):
        return "audio/mpeg"
    if data[4:8] == b"ftyp":
        return "audio/mp4"
    return None


def audio_extension(mime: str) -> str:
    return _EXTENSIONS.get(mime, "audio")


def wav_seconds(data: bytes) -> float | None:
    """The length of a PCM WAV from its `fmt ` and `data` chunks; None when it cannot be read."""
    if not (data[:4] == b"RIFF" and data[8:12] == b"WAVE"):
        return None
    offset, byte_rate = 12, None
    while offset + 8 <= len(data):
        kind, size = data[offset:offset + 4], struct.unpack("<I", data[offset + 4:offset + 8])[0]
        if kind == b"fmt " and size >= 16 and offset + 24 <= len(data):
            byte_rate = struct.unpack("<I", data[offset + 16:offset + 20])[0]
        elif kind == b"data":
            if not byte_rate:
                return None
            # A streamed WAV may declare 0 or 0xFFFFFFFF: then the bytes present say how long it is.
            present = len(data) - offset - 8
            length = present if size in (0, 0xFFFFFFFF) or size > present else size
            return length / byte_rate
        offset += 8 + size + (size & 1)
    return None


def voice_recording_store(*, data: bytes, mime: str, scope_conversation_id: UUID | None) -> Attachment:
    """Keep a recording as an unattached upload (its blob in the upload store); the send commits it."""
    sha = hashlib.sha256(data).hexdigest()
    store.write_bytes(store.upload_store(), data, sha)
    return Attachment.objects.create(
        sha256=sha, size=len(data), name=f"voice-recording.{audio_extension(mime)}", mime=mime,
        kind=AttachmentKind.AUDIO, text="", scope_conversation_id=scope_conversation_id,
    )
