"""What one stored prompt's refresh costs when its handoff's source thread is long: the time per conversation of
a refresh of every stored prompt (`prompt_refresh.stale_prompts_refresh`, as a Settings save runs it), with
sources of 6 and of 1,000 messages, in this tree and (`--before`) another, side by side in one run.

The states are `bench/many_conversations_build.py`'s (50 memories, every chat after the first with a New Chat
handoff from the one before it, capturing its final eight), with `--conversations` chats of each length, built
once by the `--before` tree (or this one) and copied per measurement. Each tree's refresh runs in a child process
of its own, in rounds; printed: the median milliseconds per conversation, wall and CPU (the child's process time:
its Python work and SQLite's, which runs in the process), and the ratios. A benchmark, not a test.

    .venv/bin/python -m bench.handoff_refresh --before /tmp/main
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(data_dir: Path, rounds: int) -> None:
    """In the tree under test (its root first on the path): the refresh of every stored prompt, `rounds` times."""
    from bench.common import setup_django

    setup_django(data_dir, None)
    from continuity.rules.prompt_refresh import stale_prompts_refresh
    from transcript.models import Message, Role, StalePrompt

    prompted = Message.objects.filter(role=Role.SYSTEM).values("conversation_id")
    walls, cpus = [], []
    for _ in range(rounds):
        marks = [StalePrompt(conversation_id=pk) for pk in prompted.values_list("conversation_id", flat=True)]
        count = len(StalePrompt.objects.bulk_create(marks, ignore_conflicts=True))
        wall, cpu = time.perf_counter(), time.process_time()
        stale_prompts_refresh()
        walls.append((time.perf_counter() - wall) * 1000 / count)
        cpus.append((time.process_time() - cpu) * 1000 / count)
    print(json.dumps({"wall": walls, "cpu": cpus}))


def measured(tree: Path, state: Path, work: Path, rounds: int) -> dict[str, list[float]]:
    copy = work / "state"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(state, copy)
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ELION_SQLITE_PATH", "ELION_TESTING")}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(copy), "--root", str(tree),
         "--rounds", str(rounds)],
        cwd=tree, env=env, capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"the refresh in {tree} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--conversations", type=int, default=50)
    parser.add_argument("--lengths", default="6,1000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "elion-handoff-refresh")
    parser.add_argument("--child", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        sys.path.insert(0, str(args.root))
        child(args.child, args.rounds)
        return
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.many_conversations_build import state_dir

    trees = {"before": args.before.resolve(), "after": ROOT} if args.before else {"this tree": ROOT}
    builder = next(iter(trees.values()))
    lengths = [int(n) for n in args.lengths.split(",")]
    args.cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="elion-handoff-refresh-"))
    loads = [os.getloadavg()[0]]
    results: dict[tuple[str, int], dict[str, list[float]]] = {}
    try:
        for length in lengths:
            state = state_dir(args.cache, builder, args.conversations, args.seed, messages_each=length)
            for label, tree in trees.items():  # interleaved per length, so the load moves both alike
                results[label, length] = measured(tree, state, work, args.rounds)
                loads.append(os.getloadavg()[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"handoff_refresh {time.strftime('%Y-%m-%d %H:%M')}, SQLite, {args.conversations} conversations, medians "
          f"of {args.rounds}, 1-minute load average between {min(loads):.1f} and {max(loads):.1f} on "
          f"{os.cpu_count()} CPUs")
    labels = list(trees)
    print("| source length | " + " | ".join(f"{label}: ms per conversation, wall / CPU" for label in labels)
          + (" | after ÷ before, wall / CPU |" if len(labels) == 2 else " |"))
    print("|---" * (len(labels) + 1 + (len(labels) == 2)) + "|")
    median = {key: {kind: statistics.median(values) for kind, values in found.items()} for key, found in results.items()}
    for length in lengths:
        cells = [f"{median[label, length]['wall']:.2f} / {median[label, length]['cpu']:.2f}" for label in labels]
        if len(labels) == 2:
            before, after = median[labels[0], length], median[labels[1], length]
            cells.append(f"×{after['wall'] / before['wall']:.2f} / ×{after['cpu'] / before['cpu']:.2f}")
        print(f"| {length:,} | " + " | ".join(cells) + " |")
    if len(lengths) > 1:
        first, last = lengths[0], lengths[-1]
        for label in labels:
            print(f"{label}: {last:,} ÷ {first:,} messages per source: ×{median[label, last]['cpu'] / median[label, first]['cpu']:.2f} "
                  "CPU per conversation")


if __name__ == "__main__":
    main()
