"""Recordings for the voice tests, made on the machine at test time (nothing is downloaded).

`spoken_wav` is a real recorded sentence from Debian's `espeak-ng` (scripts/test.sh installs it);
without it, a tone of the same shape, so API tests that only need audio still run.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import wave
from pathlib import Path

from tests.support.scripted_audio import tone_wav

SENTENCE = "Hello Elion. Please remind me to water the plants tomorrow morning."


def spoken_wav(sentence: str = SENTENCE) -> bytes:
    espeak = shutil.which("espeak-ng")
    if espeak:
        done = subprocess.run([espeak, "--stdout", sentence], capture_output=True, timeout=60, check=False)  # noqa: S603
        if done.returncode == 0 and done.stdout.startswith(b"RIFF"):
            return done.stdout
    return tone_wav(2.5)


def spoken_wav_file(directory: Path, sentence: str = SENTENCE, *, silence_seconds: float = 0.0) -> Path:
    """The sentence as a WAV file (for chromium's fake microphone), with trailing silence when asked."""
    data = spoken_wav(sentence)
    if silence_seconds:
        data = with_silence(data, silence_seconds)
    path = directory / "spoken.wav"
    path.write_bytes(data)
    return path


def with_silence(wav: bytes, seconds: float) -> bytes:
    """The same WAV with `seconds` of silence after the speech (a speaker who stops talking)."""
    with wave.open(io.BytesIO(wav)) as source:
        params = source.getparams()
        frames = source.readframes(source.getnframes())
    pad = b"\x00" * int(seconds * params.framerate) * params.sampwidth * params.nchannels
    out = io.BytesIO()
    with wave.open(out, "wb") as target:
        target.setparams(params)
        target.writeframes(frames + pad)
    return out.getvalue()
