"""The refresh's first step alone (issue 40): how long an operation's own transaction holds the row locks of
the conversations it marks, this tree against a git ref, side by side.

A Settings save marks every stored prompt, a memory edit or delete every prompt holding the memory
(`continuity.rules.prompt_refresh.static_prompts_mark_stale`, after locking those conversation rows); every send
into one of them waits for its row lock until the operation's transaction ends. This times, on the
`bench/many_conversations.py` PostgreSQL state of `--dump` (10,000 conversations, a memory held by ~9,800 of
them), medians of `--rounds` transactions, each rolled back so every round marks the same rows (after running
the checks its commit would run: `SET CONSTRAINTS ALL IMMEDIATE`):

  delete  `memory_delete`'s first transaction (`_memory_deletion_start`) for the most-held memory;
  mark    `static_prompts_mark_stale` over every conversation under `global_write_lock()` (a Settings save's mark).

Each tree (this one, and `--baseline` unpacked with `git archive`) runs in a process of its own on a fresh
database restored from the dump and migrated by that tree, the processes alternated `--pairs` times.

    .venv/bin/python -m bench.many_conversations --database postgres --sizes 10000 --cache /tmp/mc   # builds it
    .venv/bin/python -m bench.mark_cost --dump /tmp/mc/postgres-main-10000/elion.dump --baseline 8a8d69f
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class _RolledBack(Exception):
    pass


def child(database_url: str, rounds: int) -> dict[str, float]:
    """In a process of one tree (the current directory), on its migrated database: median ms of each
    transaction, rolled back."""
    from bench.common import setup_django

    setup_django(Path(tempfile.mkdtemp(prefix="mark-cost-")), database_url)
    from django.db import connection, transaction
    from django.db.models import Count

    from continuity.rules.prompt_refresh import static_prompts_mark_stale
    from memories.models import SnapshotMembership
    from memories.services import memory_writes
    from memories.services.write_lock import global_write_lock
    from transcript.models import Conversation

    held_most = (
        SnapshotMembership.objects.values("memory").annotate(holders=Count("id")).order_by("-holders").first()
    )

    def settings_mark() -> None:
        global_write_lock()
        static_prompts_mark_stale(Conversation.all_objects.all())

    # The transaction's body alone: the service's wrapper would rebuild the marked prompts after it.
    deletion_start = getattr(memory_writes._memory_deletion_start, "__wrapped__", memory_writes._memory_deletion_start)

    def delete_start() -> None:
        deletion_start(memory_id=held_most["memory"])

    medians = {}
    for name, body in (("delete", delete_start), ("mark", settings_mark)):
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            try:
                with transaction.atomic():
                    body()
                    # The checks a commit would run (deferred foreign keys: the marks' own), run now.
                    with connection.cursor() as cursor:
                        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                    raise _RolledBack
            except _RolledBack:
                samples.append((time.perf_counter() - started) * 1000)
        medians[name] = statistics.median(samples)
    medians["holders"] = held_most["holders"]
    return medians


def run_tree(tree: Path, server_url: str, dump: Path, rounds: int) -> dict[str, float]:
    from bench.many_conversations import state_restored
    from bench.servers import pg_drop_database

    database_url, created = state_restored(server_url, dump)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench.mark_cost", "--child", database_url, "--rounds", str(rounds)],
            cwd=tree, check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)},
        )
    finally:
        pg_drop_database(server_url, created)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="a bench/many_conversations.py PostgreSQL state (elion.dump)")
    parser.add_argument("--baseline", help="the git ref measured side by side with this tree")
    parser.add_argument("--rounds", type=int, default=5, help="transactions per kind and process (medians)")
    parser.add_argument("--pairs", type=int, default=3, help="processes per tree, alternated")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.rounds)))
        return 0
    if not (args.dump and args.baseline):
        parser.error("--dump and --baseline are required")
    from bench.common import THIS_TREE, baseline_tree, load_line, medians_of, pair_ratios_line, trees_alternated
    from bench.servers import postgres_server

    with baseline_tree(args.baseline, Path(__file__).resolve()) as baseline, \
            postgres_server("postgres") as server_url:
        trees = {args.baseline: baseline, THIS_TREE: ROOT}
        results = trees_alternated(trees, args.pairs,
                                   lambda tree: run_tree(tree, server_url, args.dump.resolve(), args.rounds))
    holders = results[THIS_TREE][0]["holders"]
    print(f"\n| tree | memory delete's first transaction ({holders:,} holders), ms | every prompt's mark, ms |")
    print("|---|---|---|")
    for name in trees:
        cells = medians_of(results[name], ["delete", "mark"])
        print(f"| {name} | {cells[0]:.0f} | {cells[1]:.0f} |")
    for kind in ("delete", "mark"):
        print(pair_ratios_line(results, args.baseline, kind, f"{args.baseline}, {kind}"))
    print(load_line(f"{args.rounds} rolled-back transactions per kind and process, {args.pairs} processes per tree"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
