"""How many legacy stored prompts does reconciliation rebuild per second?

Seed: older stored prompts are reconciled "in bounded background batches
without delaying the server from opening its port". This bench loads
`--conversations` threads (default 20,000), each with its own random memory
snapshot and a stale stored prompt (an older policy marker and a retired
"recent activity" section), a tenth of them with a verbatim handoff row, then
runs `prompts_reconcile` (the service behind the django-q2 batch jobs and
`manage.py reconcile_prompts`) at each `--batch-sizes` value on a fresh copy of
the stale state, and prints prompts per second, the median batch time and the
SQL statements per batch. It also times the health endpoint's status query
while every prompt is still stale.

    .venv/bin/python -m bench.reconcile                        # SQLite
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.reconcile; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                  # PostgreSQL

A benchmark, not a test: it asserts nothing about timing. It fails only when
a run leaves a stale prompt behind or records no completion.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import setup_django  # noqa: E402
from bench.servers import in_process_bench_close  # noqa: E402

MEMORIES = 40
OLD_MARKERS = {"prompt_policy": "static-prompt/2025-01-01", "recall_policy": "recall/2025-01-01"}
RECENT_ACTIVITY = "\n=== RECENT ACTIVITY FROM OTHER CONVERSATIONS ===\n- Another thread: None\n"




def load(count: int, seed: int) -> None:
    """Threads with random snapshots, prompts built as the app builds them, then made stale."""
    from django.db import transaction

    from continuity.models import ThreadHandoff
    from continuity.rules.prompt_policy import build_static_prompt
    from continuity.rules.prompt_store import prompt_inputs_many
    from elion.base.assistant_settings import assistant_settings_get
    from memories.models import ConversationMemorySnapshot, SnapshotMembership
    from memories.services.memory_writes import memory_add
    from transcript.models import Conversation, Message, MessageKind, Role

    rng = random.Random(seed)
    memories = [memory_add(text=f"Fact {i}: " + "m" * rng.randint(40, 300)).pk for i in range(MEMORIES)]
    started = time.perf_counter()
    with transaction.atomic():
        source = Conversation.objects.create(title="Source", last_seq=2)
        user = Message.objects.create(conversation=source, seq=1, role=Role.USER, content="Remember the lighthouse?")
        reply = Message.objects.create(
            conversation=source, seq=2, parent=user, role=Role.ASSISTANT, content="Always. " + "r" * 2_000
        )
        source.head = reply
        source.save(update_fields=["head"])
        conversations = Conversation.objects.bulk_create(
            [Conversation(title=f"Thread {i}", last_seq=1) for i in range(count)], batch_size=2_000
        )
        ConversationMemorySnapshot.objects.bulk_create(
            [ConversationMemorySnapshot(conversation=c, provenance="captured") for c in conversations], batch_size=2_000
        )
        SnapshotMembership.objects.bulk_create(
            [
                SnapshotMembership(conversation=c, memory_id=m)
                for c in conversations
                for m in rng.sample(memories, rng.randint(0, 12))
            ],
            batch_size=5_000,
        )
        ThreadHandoff.objects.bulk_create(
            [
                ThreadHandoff(destination=c, source=source, source_message_ids=[str(user.pk), str(reply.pk)],
                              handoff="AUMA said:\nRemember the lighthouse?")
                for c in conversations[::10]
            ],
            batch_size=2_000,
        )
        inputs = prompt_inputs_many(conversations, settings_row=assistant_settings_get())
        Message.objects.bulk_create(
            [
                Message(
                    conversation=c, seq=1, role=Role.SYSTEM, kind=MessageKind.STATIC_PROMPT,
                    content=build_static_prompt(inputs[c.pk]) + RECENT_ACTIVITY,
                    metadata={"policy_markers": OLD_MARKERS},
                )
                for c in conversations
            ],
            batch_size=2_000,
        )
    print(f"loaded {count:,} stale prompts in {time.perf_counter() - started:.1f} s")


def make_stale_again() -> None:
    from continuity.models import PromptReconciliationFailure, PromptReconciliationRun
    from transcript.models import Message, Role

    Message.objects.filter(role=Role.SYSTEM).update(metadata={"policy_markers": OLD_MARKERS})
    PromptReconciliationRun.objects.all().delete()
    PromptReconciliationFailure.objects.all().delete()


def run(batch_size: int, count: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from continuity.services.reconciliation import prompts_reconcile_batch, reconciliation_status

    times, statements = [], []
    started = time.perf_counter()
    after = None
    while True:
        connection.queries_log.clear()
        with CaptureQueriesContext(connection) as queries:
            batch_started = time.perf_counter()
            # As the job chain does: each batch starts where the previous one stopped.
            result = prompts_reconcile_batch(batch_size=batch_size, after=after)
            after = result.after
            times.append(time.perf_counter() - batch_started)
        statements.append(len(queries))
        if not result.more:
            break
    total = time.perf_counter() - started
    status = reconciliation_status()
    if not status.completed or status.pending:
        raise SystemExit(f"batch size {batch_size}: reconciliation left {status.pending} stale prompts")
    return {"total": total, "rate": count / total, "batch": statistics.median(times), "statements": statements}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=20_000)
    parser.add_argument("--batch-sizes", default="50,200,1000")
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    sizes = [int(size) for size in args.batch_sizes.split(",")]

    server_url = os.environ.get("DATABASE_URL") or None
    data_dir = Path(tempfile.mkdtemp(prefix="elion-reconcile-"))
    drop = None
    try:
        database_url = None
        if server_url:
            from bench.servers import pg_create_database

            database_url, drop = pg_create_database(server_url)
        setup_django(data_dir, database_url)
        from django.db import connection

        from continuity.services.reconciliation import reconciliation_status

        print(f"database: {connection.vendor}")
        load(args.conversations, args.seed)
        health = []
        for _ in range(5):
            started = time.perf_counter()
            pending = reconciliation_status().pending
            health.append(time.perf_counter() - started)
        print(f"health status query with {pending:,} stale prompts: median {statistics.median(health) * 1000:.1f} ms")
        for size in sizes:
            make_stale_again()
            result = run(size, args.conversations)
            print(
                f"batch size {size:>5}: {result['rate']:8.0f} prompts/s  ({result['total']:.1f} s in all, median batch "
                f"{result['batch'] * 1000:.0f} ms, SQL statements per batch {min(result['statements'])}-"
                f"{max(result['statements'])})"
            )
    finally:
        in_process_bench_close(server_url, drop, data_dir)


if __name__ == "__main__":
    main()
