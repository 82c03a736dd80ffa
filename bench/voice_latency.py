"""Talk against typing: from the end of the owner's speech to the first audio of the reply.

One run, side by side, against one scripted provider (a subprocess, `tests.support.scripted_provider`)
with realistic delays, through one Daphne process (real app, real database), over HTTP as the page
does it:

  typed   the words are sent (`POST …/messages/`, SSE read to `done`), then the reply's first
          segment of speech is fetched (`…/speech/segments/`, `…/speech/?segment=0`): what Read aloud
          automatically does after the owner presses Enter;
  talk    the recording is transcribed (`POST /api/transcriptions/`), the words are sent with
          `"voice": true`, and while the reply streams its finished segments are listed (after a
          delta, at most every 0.3 s) until the first is there, which is fetched: what Talk does once
          its detector has heard the pause (the pause itself, the owner's setting, is before this
          clock starts); Talk reads a reply as it streams, Read aloud once it has settled.

Each side alternates round by round; the figure is the median. "Talk / (typed + transcription)"
is the issue's target ratio (within 1.5×): Talk's time over the typed path plus the
transcription's own time measured in the same round.

    .venv/bin/python -m bench.voice_latency               # SQLite, 10 rounds a side
    .venv/bin/python -m bench.voice_latency --rounds 20

A benchmark, not a test: it asserts nothing about timing. It fails only when a path misbehaves.
Everything it starts is stopped and its temp dir removed. All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.servers import BenchError, app_env, start_daphne, start_provider, stop_process  # noqa: E402
from tests.support.voice_files import spoken_wav  # noqa: E402

REPLY = "Tomatoes like a sunny spot and deep watering. " * 4
# Realistic pacing: transcription ~0.35 s to its first word; a reply 0.6 s to its first token then ~30
# words; speech 0.3 s to its audio.
TRANSCRIPTION = {"text": "What should I plant this spring?", "delay_before_first": 0.35, "delay_between_chunks": 0.02}
SPOKEN_REPLY = {"text": REPLY, "delay_before_first": 0.6, "delay_between_chunks": 0.02}
SPEECH = {"delay_before_first": 0.3}


def control(provider_url: str, path: str, payload: object) -> None:
    import httpx

    httpx.post(f"{provider_url.removesuffix('/v1')}/_control/{path}", json=payload, timeout=30).raise_for_status()


def sse_until_done(client, url: str, body: dict) -> dict:
    with client.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as response:
        if response.status_code != 200:
            raise BenchError(f"send answered {response.status_code}: {response.read()[:300]!r}")
        name = None
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:") and name == "done":
                return json.loads(line[5:])
            elif line.startswith("data:") and name == "error":
                raise BenchError(f"the reply failed: {line}")
    raise BenchError("the reply stream ended without done")


def first_audio_while_streaming(client, app: str, conversation_id: str, body: dict) -> float:
    """Talk: send, and as the reply streams list its finished segments (as the page does after a delta,
    at most every 0.3 s) until one is there and fetch it; returns when that first audio arrived
    (`perf_counter`), after reading the stream on to `done`."""
    url = f"{app}/api/conversations/{conversation_id}/messages/"
    listed_at, heard_at, message_id, name = 0.0, None, None, None
    with client.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as response:
        if response.status_code != 200:
            raise BenchError(f"send answered {response.status_code}: {response.read()[:300]!r}")
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
                continue
            if not line.startswith("data:"):
                continue
            data = json.loads(line[5:])
            if name == "assistant_message":
                message_id = data["id"]
            elif name == "error":
                raise BenchError(f"the reply failed: {line}")
            if heard_at is None and message_id and name in ("delta", "done") and (
                name == "done" or time.perf_counter() - listed_at >= 0.3
            ):
                listed_at = time.perf_counter()
                base = f"{app}/api/conversations/{conversation_id}/messages/{message_id}/speech/"
                segments = client.get(base + "segments/").json()["segments"]
                if segments:
                    audio = client.get(app + segments[0]["url"])
                    if audio.status_code != 200 or not audio.content.startswith(b"RIFF"):
                        raise BenchError(f"speech answered {audio.status_code}")
                    heard_at = time.perf_counter()
            if name == "done":
                break
    if heard_at is None:
        raise BenchError("no segment of the reply was ever listed")
    return heard_at


def first_audio(client, app: str, conversation_id: str, message_id: str) -> None:
    base = f"{app}/api/conversations/{conversation_id}/messages/{message_id}/speech/"
    segments = client.get(base + "segments/").json()["segments"]
    audio = client.get(segments[0]["url"] if segments[0]["url"].startswith("http") else app + segments[0]["url"])
    if audio.status_code != 200 or not audio.content.startswith(b"RIFF"):
        raise BenchError(f"speech answered {audio.status_code}")


def one_round(client, app: str, provider_url: str, conversation_id: str, recording: bytes) -> tuple[float, float, float]:
    url = f"{app}/api/conversations/{conversation_id}/messages/"
    control(provider_url, "script", [SPOKEN_REPLY])
    control(provider_url, "script-speech", [SPEECH])
    started = time.perf_counter()
    done = sse_until_done(client, url, {"content": "What should I plant this spring?"})
    first_audio(client, app, conversation_id, done["message_id"])
    typed = time.perf_counter() - started

    control(provider_url, "script-transcriptions", [TRANSCRIPTION])
    control(provider_url, "script", [SPOKEN_REPLY])
    control(provider_url, "script-speech", [SPEECH])
    started = time.perf_counter()
    answer = client.post(f"{app}/api/transcriptions/", files={"file": ("talk.wav", recording, "audio/wav")},
                         data={"conversation_id": conversation_id})
    transcribed = time.perf_counter() - started
    if answer.status_code != 200:
        raise BenchError(f"transcription answered {answer.status_code}: {answer.text[:300]}")
    heard_at = first_audio_while_streaming(client, app, conversation_id, {"content": answer.json()["text"], "voice": True})
    talk = heard_at - started
    return typed, talk, transcribed


def main(argv: list[str] | None = None) -> int:
    import httpx

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="elion-voice-"))
    processes: list[subprocess.Popen] = []
    try:
        provider, provider_url = start_provider(tmp)
        processes.append(provider)
        env = app_env(tmp / "data", None, provider_url)
        (tmp / "data").mkdir()
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        daphne, app = start_daphne(tmp, env, instrumented=False)
        processes.append(daphne)
        recording = spoken_wav()
        with httpx.Client(timeout=60) as client:
            conversation_id = client.post(f"{app}/api/conversations/", json={}).json()["id"]
            one_round(client, app, provider_url, conversation_id, recording)  # warm-up: the stored prompt, pools
            rounds = [one_round(client, app, provider_url, conversation_id, recording) for _ in range(args.rounds)]
        typed = statistics.median(r[0] for r in rounds)
        talk = statistics.median(r[1] for r in rounds)
        transcription = statistics.median(r[2] for r in rounds)
        ratio = statistics.median(r[1] / (r[0] + r[2]) for r in rounds)
        print(f"voice latency, {args.rounds} rounds a side (median), SQLite, one Daphne process")
        print()
        print("| path | end of speech (or Enter) → first audio of the reply |")
        print("|---|---|")
        print(f"| typed + Enter | {typed * 1000:.0f} ms |")
        print(f"| Talk | {talk * 1000:.0f} ms |")
        print(f"| of which transcription | {transcription * 1000:.0f} ms |")
        print(f"| Talk / (typed + transcription) | {ratio:.2f}× (target ≤ 1.5×) |")
        return 0
    finally:
        for process in reversed(processes):
            stop_process(process)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
