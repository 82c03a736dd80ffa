"""How does editing one memory scale with the number of threads that hold it?

Seed: an edit "refreshes existing prompts only for threads whose snapshots
already contain that memory ID". This bench edits a memory held by 50 threads
and one held by 5,000 threads (every thread with a stored static prompt and
its own random snapshot, so prompts differ), interleaved round by round in one
run, and prints per side the median wall time of `memory_edit` (the whole
transaction: lock, update, rebuild, write, commit) and its SQL statement count,
then the ratios. Targets: the statement count does not grow with the number of
threads, and 5,000 threads refresh in under 2 seconds.

    .venv/bin/python -m bench.memory_fanout                    # SQLite
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.memory_fanout; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                  # PostgreSQL

A benchmark, not a test: it asserts nothing about timing. It fails only when
an edit does not reach every holder's stored prompt.
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

OTHER_MEMORIES = 12




def load(small: int, large: int, seed: int) -> tuple[int, int]:
    """Threads holding the small-side or large-side memory, each with random
    other members and a stored prompt built exactly as the app builds it."""
    from django.db import transaction

    from continuity.rules.policies import policy_markers
    from continuity.rules.prompt_policy import build_static_prompt
    from continuity.rules.prompt_store import prompt_inputs_many
    from elion.base.assistant_settings import assistant_settings_get
    from memories.models import ConversationMemorySnapshot, Memory, SnapshotMembership
    from memories.services.memory_writes import memory_add
    from transcript.models import Conversation, Message, MessageKind, Role

    rng = random.Random(seed)
    small_memory = memory_add(text="Held by the small side", category="place", importance=4)
    large_memory = memory_add(text="Held by the large side", category="identity", importance=5)
    others = [memory_add(text=f"Background fact {i}: " + "x" * rng.randint(20, 200)).pk for i in range(OTHER_MEMORIES)]
    started = time.perf_counter()
    with transaction.atomic():
        conversations = Conversation.objects.bulk_create(
            [Conversation(title=f"Thread {i}", last_seq=1) for i in range(small + large)], batch_size=2_000
        )
        ConversationMemorySnapshot.objects.bulk_create(
            [ConversationMemorySnapshot(conversation=c, provenance="captured") for c in conversations], batch_size=2_000
        )
        memberships = []
        for index, conversation in enumerate(conversations):
            target = small_memory.pk if index < small else large_memory.pk
            for memory_id in [target, *rng.sample(others, rng.randint(0, OTHER_MEMORIES))]:
                memberships.append(SnapshotMembership(conversation=conversation, memory_id=memory_id))
        SnapshotMembership.objects.bulk_create(memberships, batch_size=5_000)
        inputs = prompt_inputs_many(conversations, settings_row=assistant_settings_get())
        markers = policy_markers()
        built: dict = {}
        prompts = []
        for conversation in conversations:
            key = inputs[conversation.pk]
            content = built.get(key) or built.setdefault(key, build_static_prompt(key))
            prompts.append(
                Message(
                    conversation=conversation, seq=1, role=Role.SYSTEM, kind=MessageKind.STATIC_PROMPT,
                    content=content, metadata={"policy_markers": markers},
                )
            )
        Message.objects.bulk_create(prompts, batch_size=2_000)
    print(
        f"loaded {small + large:,} threads ({len(memberships):,} memberships, {len(built):,} distinct prompts) "
        f"in {time.perf_counter() - started:.1f} s"
    )
    assert Memory.objects.count() == OTHER_MEMORIES + 2
    return small_memory.pk, large_memory.pk


def edit_once(memory_id: int, text: str, holders: int) -> tuple[float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memories.services.memory_writes import memory_edit
    from transcript.models import Message, Role

    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        memory_edit(memory_id=memory_id, changes={"text": text})
        elapsed = time.perf_counter() - started
    reached = Message.objects.filter(role=Role.SYSTEM, content__contains=text).count()
    if reached != holders:
        raise SystemExit(f"the edit reached {reached} stored prompts, expected {holders}")
    return elapsed, len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--large", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()

    server_url = os.environ.get("DATABASE_URL") or None
    data_dir = Path(tempfile.mkdtemp(prefix="elion-fanout-"))
    drop = None
    try:
        database_url = None
        if server_url:
            from bench.servers import pg_create_database

            database_url, drop = pg_create_database(server_url)
        setup_django(data_dir, database_url)
        from django.db import connection

        print(f"database: {connection.vendor}")
        small_id, large_id = load(args.small, args.large, args.seed)
        edit_once(small_id, "warm-up small", args.small)
        edit_once(large_id, "warm-up large", args.large)
        results: dict[str, list[tuple[float, int]]] = {"small": [], "large": []}
        for round_number in range(args.rounds):
            sides = [("small", small_id, args.small), ("large", large_id, args.large)]
            if round_number % 2:
                sides.reverse()
            for name, memory_id, holders in sides:
                results[name].append(edit_once(memory_id, f"{name} edit {round_number}", holders))

        def summary(name: str, holders: int) -> tuple[float, int]:
            times = [t for t, _ in results[name]]
            counts = sorted({q for _, q in results[name]})
            median = statistics.median(times)
            print(
                f"{holders:>6,} threads: median {median * 1000:8.1f} ms  (min {min(times) * 1000:.1f}, "
                f"max {max(times) * 1000:.1f})  SQL statements per edit: {', '.join(map(str, counts))}"
            )
            return median, max(counts)

        small_time, small_queries = summary("small", args.small)
        large_time, large_queries = summary("large", args.large)
        print(f"ratio {args.large:,}/{args.small:,} threads: time x{large_time / small_time:.1f}, "
              f"statements x{large_queries / small_queries:.2f}")
        print(f"target: statements do not grow -> {'met' if large_queries <= small_queries else 'NOT met'}; "
              f"{args.large:,} threads under 2 s -> {'met' if large_time < 2 else 'NOT met'}")
    finally:
        in_process_bench_close(server_url, drop, data_dir)


if __name__ == "__main__":
    main()
