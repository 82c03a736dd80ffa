"""A send's own work at 10 and at 100,000 messages (issue 40), this tree against a git ref's, side by side.

`bench/years.py` times a send through the server until its first delta; most of what it adds at 100,000
messages is the send's composition (`send_prepare`: the user turn and the reply row written, the stretch of
the branch read, the request built), which this times alone, in-process, at the smallest and the largest
thread of a `bench/years.py` cache entry (its SQLite file, copied afresh for each process). Each tree
(this one, and `--baseline` unpacked with `git archive`) runs in a process of its own, the processes
alternated `--pairs` times, so the two are measured under the same load. Each process migrates its copy
with its own tree, rebinds the rows to its provider (as `bench/send_floor.py` does) and reports medians
of `--rounds` sends, each followed by a rewind to the original head so every send composes the same
branch.

    .venv/bin/python -m bench.years --database sqlite --cache /tmp/years      # builds the threads once
    .venv/bin/python -m bench.send_compose --entry /tmp/years/sqlite-<key> --baseline afd993e
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
QUESTION = "What did we say about the pears in the orchard?"


def child(entry: Path, rounds: int) -> dict[str, float]:
    """In a process of one tree (the current directory): median ms of a send at the smallest and largest
    thread."""
    built = json.loads((entry / "built.json").read_text())
    scratch = Path(tempfile.mkdtemp(prefix="send-compose-"))
    try:
        shutil.copy(entry / "elion.sqlite3", scratch / "elion.sqlite3")
        os.environ["OPENAI_API_KEY"] = "bench"
        from bench.common import setup_django

        setup_django(scratch, None)
        from conversations.sending.commands import SendCommand
        from conversations.sending.prepare import send_prepare
        from transcript.models import Conversation, Message
        from transcript.provider.binding import configured_provider

        binding = configured_provider().binding()
        Message.objects.exclude(role="system").update(
            provider_id=binding.provider_id, provider_type=binding.provider_type, model=binding.model,
            route_fingerprint=binding.route_fingerprint,
        )
        medians = {}
        for thread in (built["threads"][0], built["threads"][-1]):
            conversation = Conversation.objects.get(pk=thread["conversation_id"])
            head = conversation.head_id

            def send(conversation=conversation, head=head) -> None:
                send_prepare(SendCommand(conversation_id=conversation.id, content=QUESTION))
                Message.objects.filter(conversation=conversation, status="streaming").update(
                    status="complete", content="Done.", lease_expires_at=None)
                Conversation.objects.filter(pk=conversation.pk).update(head_id=head)

            send()  # stores the prompt
            send()
            samples = []
            for _ in range(rounds):
                started = time.perf_counter()
                send()
                samples.append((time.perf_counter() - started) * 1000)
            medians[thread["label"]] = statistics.median(samples)
        return medians
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_tree(tree: Path, entry: Path, rounds: int) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.send_compose", "--child", "--entry", str(entry), "--rounds", str(rounds)],
        cwd=tree, check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entry", type=Path, required=True, help="a bench/years.py cache entry (SQLite)")
    parser.add_argument("--baseline", help="the git ref measured side by side with this tree")
    parser.add_argument("--rounds", type=int, default=11, help="sends per thread and process (medians)")
    parser.add_argument("--pairs", type=int, default=3, help="processes per tree, alternated")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.entry.resolve(), args.rounds)))
        return 0
    if not args.baseline:
        parser.error("--baseline is required")
    from bench.common import THIS_TREE, baseline_tree, load_line, medians_of, pair_ratios_line, trees_alternated

    with baseline_tree(args.baseline, Path(__file__).resolve()) as baseline:
        trees = {"baseline": baseline, THIS_TREE: ROOT}
        results = trees_alternated(trees, args.pairs, lambda tree: run_tree(tree, args.entry.resolve(), args.rounds))
    labels = list(results[THIS_TREE][0])
    print(f"\n| tree | {' | '.join(f'{label} messages, ms' for label in labels)} | {labels[-1]} ÷ {labels[0]} |")
    print("|---|" + "---|" * (len(labels) + 1))
    for name in trees:
        cells = medians_of(results[name], labels)
        print(f"| {name} | {' | '.join(f'{cell:.1f}' for cell in cells)} | ×{cells[-1] / cells[0]:.1f} |")
    print()
    print(pair_ratios_line(results, "baseline", labels[-1], f"{args.baseline} at {labels[-1]} messages"))
    print(load_line(f"{args.rounds} sends per thread and process, {args.pairs} processes per tree"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
