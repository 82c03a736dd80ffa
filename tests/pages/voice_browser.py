"""Chromium with a fake microphone that plays a real recorded sentence (issue 43).

The sentence is made at test time with Debian's `espeak-ng` (a tone when it is missing), written to
a WAV, and handed to chromium as its capture device: `--use-fake-device-for-media-stream
--use-file-for-fake-audio-capture=<wav>`, with the permission prompt accepted
(`--use-fake-ui-for-media-stream`). Nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import CHROMIUM_ARGS
from tests.pages.conftest import CHROMIUM
from tests.support.voice_files import spoken_wav_file


def fake_microphone_args(wav: Path, *, loop: bool = True) -> list[str]:
    return [
        *CHROMIUM_ARGS,
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}{'' if loop else '%noloop'}",
        "--autoplay-policy=no-user-gesture-required",
    ]


@contextmanager
def chromium_with_microphone(
    browser: object, directory: Path, *, silence_seconds: float = 0.0, recording: bytes | None = None,
    loop: bool = True,
) -> Iterator[object]:
    """A second chromium, started by the session's Playwright (`browser`, tests/pages/conftest.py: one
    sync Playwright per process), whose microphone plays the spoken sentence (or `recording`), looped
    unless `loop=False`."""
    if recording is None:
        wav = spoken_wav_file(directory, silence_seconds=silence_seconds)
    else:
        wav = directory / "microphone.wav"
        wav.write_bytes(recording)
    chromium = browser.browser_type.launch(executable_path=CHROMIUM, args=fake_microphone_args(wav, loop=loop))
    try:
        yield chromium
    finally:
        chromium.close()
