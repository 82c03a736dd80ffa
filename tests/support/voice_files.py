"""Recordings for the voice tests, made on the machine at test time (nothing is downloaded).

`spoken_wav` is a real recorded sentence from Debian's `espeak-ng` (scripts/test.sh installs it);
without it, a tone of the same shape, so API tests that only need audio still run.
"""

from __future__ import annotations

import array
import io
import math
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
            return _well_formed(done.stdout)
    return tone_wav(2.5)


def _well_formed(wav: bytes) -> bytes:
    """The WAV with its sizes set to the bytes present (`espeak-ng --stdout` writes a streaming header)."""
    with wave.open(io.BytesIO(wav)) as source:
        params = source.getparams()
        frames = source.readframes(params.nframes)  # as many as there are
    return _wav(params, frames)


def _wav(params: wave._wave_params, frames: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as target:
        target.setnchannels(params.nchannels)
        target.setsampwidth(params.sampwidth)
        target.setframerate(params.framerate)
        target.writeframes(frames)
    return out.getvalue()


def scaled(wav: bytes, factor: float) -> bytes:
    """The same 16-bit WAV at `factor` of its loudness (a voice leaking back at playback level)."""
    with wave.open(io.BytesIO(wav)) as source:
        params = source.getparams()
        samples = array.array("h", source.readframes(params.nframes))
    samples = array.array("h", (max(-32768, min(32767, int(v * factor))) for v in samples))
    return _wav(params, samples.tobytes())


def silence(seconds: float, like: bytes) -> bytes:
    with wave.open(io.BytesIO(like)) as source:
        params = source.getparams()
    return _wav(params, b"\x00" * int(seconds * params.framerate) * params.sampwidth * params.nchannels)


def joined(*wavs: bytes) -> bytes:
    """WAVs of one format, one after another."""
    frames = b""
    params = None
    for data in wavs:
        with wave.open(io.BytesIO(data)) as source:
            params = params or source.getparams()
            frames += source.readframes(source.getparams().nframes)
    return _wav(params, frames)


def rms_levels(wav: bytes, window_seconds: float = 0.05) -> list[float]:
    """The loudness of each window, as the page's detector measures it (RMS of samples in -1..1)."""
    with wave.open(io.BytesIO(wav)) as source:
        params = source.getparams()
        samples = array.array("h", source.readframes(params.nframes))
    window = max(1, int(params.framerate * window_seconds))
    return [
        math.sqrt(sum(v * v for v in samples[i:i + window]) / window) / 32768
        for i in range(0, len(samples) - window + 1, window)
    ]


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
    return joined(wav, silence(seconds, wav))
