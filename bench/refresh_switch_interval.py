"""What a refresh running in one thread costs a send-like run of statements in another thread of the same
process, at the interpreter's switch intervals 5 ms (Python's default), 1 ms and 0.5 ms
(`continuity.rules.prompt_refresh.REFRESH_SWITCH_INTERVAL`), against the same run with no refresh: alternating
in one process, so the machine's load moves all of them alike.

The refresh thread loops `stale_prompts_refresh` over every stored prompt of a `bench/many_conversations_build.py`
state (100 conversations by default); the send-like run reads five rows of thirty conversations, thirty
statements, each releasing the GIL while SQLite runs and taking it back after. The interval is set directly
here (the refresh's own setting is what is measured against). A benchmark, not a test.

    .venv/bin/python -m bench.refresh_switch_interval
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INTERVALS_MS = ("5.0", "1.0", "0.5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "elion-handoff-refresh")
    args = parser.parse_args()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.many_conversations_build import state_dir

    args.cache.mkdir(parents=True, exist_ok=True)
    state = state_dir(args.cache, ROOT, args.conversations, args.seed)
    work = Path(tempfile.mkdtemp(prefix="elion-switch-"))
    try:
        shutil.copytree(state, work / "state")
        measure(work / "state", args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(data_dir: Path, rounds: int) -> None:
    from bench.common import setup_django

    setup_django(data_dir, None)
    from django.db import connection

    from continuity.rules import prompt_refresh
    from transcript.models import Conversation, Message, Role, StalePrompt

    # The refresh's own interval would override the one measured: here it leaves the interval as set.
    prompt_refresh._gives_way_to_requests = contextlib.nullcontext
    ids = list(Conversation.objects.values_list("pk", flat=True)[:30])
    prompted = Message.objects.filter(role=Role.SYSTEM).values("conversation_id")

    def send_like() -> float:
        started = time.perf_counter()
        for pk in ids:
            list(Message.objects.filter(conversation_id=pk).values_list("id", "seq")[:5])
        return time.perf_counter() - started

    stop, running = threading.Event(), threading.Event()

    def refresher() -> None:
        while not stop.is_set():
            if not running.is_set():
                time.sleep(0.01)
                continue
            StalePrompt.objects.bulk_create(
                [StalePrompt(conversation_id=pk) for pk in prompted.values_list("conversation_id", flat=True)],
                ignore_conflicts=True,
            )
            prompt_refresh.stale_prompts_refresh()
        connection.close()

    default = sys.getswitchinterval()
    loads = [os.getloadavg()[0]]
    found: dict[str, list[float]] = {"idle": [], **{interval: [] for interval in INTERVALS_MS}}
    thread = threading.Thread(target=refresher)
    thread.start()
    try:
        for _ in range(rounds):
            for label in found:
                if label == "idle":
                    running.clear()
                    sys.setswitchinterval(default)
                else:
                    sys.setswitchinterval(float(label) / 1000)
                    running.set()
                time.sleep(0.3)
                found[label] += [send_like() for _ in range(5)]
    finally:
        stop.set()
        running.clear()
        thread.join()
        sys.setswitchinterval(default)
    loads.append(os.getloadavg()[0])
    idle = statistics.median(found["idle"])
    print(f"refresh_switch_interval {time.strftime('%Y-%m-%d %H:%M')}, SQLite, medians of {5 * rounds}, 1-minute "
          f"load average between {min(loads):.1f} and {max(loads):.1f} on {os.cpu_count()} CPUs")
    print("| a send-like run of thirty statements | median | ÷ idle |")
    print("|---|---|---|")
    for label, values in found.items():
        name = "no refresh running" if label == "idle" else f"a refresh running, switch interval {label} ms"
        print(f"| {name} | {statistics.median(values) * 1000:.1f} ms | ×{statistics.median(values) / idle:.2f} |")


if __name__ == "__main__":
    main()
