"""Audio usage as it is billed (issue 43): one `AudioUsage` row per transcription or piece of speech the
provider made. What the provider reported is recorded as it reported it; what it did not report is
measured here (the recording's or the speech's length, the characters sent). The offline demo and a
replay from a stored blob cost nothing and are never recorded. `operations.audio_usage` prices the rows.
"""

from __future__ import annotations

from elion.models import AudioCall, AudioUsage
from transcript.attachments.audio import wav_seconds
from transcript.provider.audio import SPEECH_INPUT_LIMIT, TranscriptDone


def transcription_usage_record(*, model: str, done: TranscriptDone, recording_seconds: float | None) -> None:
    """A transcription the provider made: its token counts or duration, and the recording's length."""
    if done.demo:
        return
    if done.input_tokens is not None or done.output_tokens is not None:
        reported = "tokens"
    elif done.seconds is not None:
        reported = "duration"
    else:
        reported = "none"
    AudioUsage.objects.create(
        kind=AudioCall.TRANSCRIPTION, model=model, reported=reported,
        seconds=done.seconds if done.seconds is not None else recording_seconds,
        input_tokens=done.input_tokens, input_audio_tokens=done.input_audio_tokens,
        input_text_tokens=done.input_text_tokens, output_tokens=done.output_tokens,
    )


def speech_usage_record(*, model: str, text: str, audio: bytes, demo: bool) -> None:
    """A piece of speech the provider made: `audio.speech.create` reports nothing, so the characters sent
    (the input as the provider gets it, at most its limit) and the length of the WAV made are recorded."""
    if demo:
        return
    AudioUsage.objects.create(
        kind=AudioCall.SPEECH, model=model, reported="none",
        seconds=wav_seconds(audio), characters=len(text[:SPEECH_INPUT_LIMIT]),
    )
