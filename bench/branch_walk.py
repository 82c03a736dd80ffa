"""Why the live-branch windows stay SQL, and what checking their walk's last step costs.

One thread of `--messages` messages (default 20,000) in one straight branch.
Interleaved, `--rounds` times each, measured side by side in one run:

- `window, SQL walk` — `branch_window_newest(limit=50)`: the recursive walk
  inside the database, its last step checked by `transcript.tree.tree_break`
  (what the pages run since issue 32);
- `window, SQL walk unchecked` — the same walk with the tail it had before
  (the ids only, no look at the last step's parent), then the same rows read;
- `window, walk_up in Python` — every row of the conversation read, then
  `transcript.tree.walk_up` from the head for 51 steps: the one Python walk,
  which a window would use if it were not SQL;
- `whole branch, SQL walk` and `whole branch, walk_up` — the token estimate
  (`branch_token_estimate`) against `walk_to_root` over every row, summed.

It prints each one's median milliseconds and statements, and the ratios.

    .venv/bin/python -m bench.branch_walk                         # SQLite
    .venv/bin/python -m bench.branch_walk --messages 2000         # quick
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.branch_walk; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                      # PostgreSQL

A benchmark, not a test: it asserts nothing about timing. It fails only when
the ways disagree on the window.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import setup_django  # noqa: E402
from bench.send_overhead import in_process_bench_close  # noqa: E402

LIMIT = 50


def build(count: int):
    from conversations.services.threads.thread_writes import conversation_create
    from transcript.models import Conversation, Message

    conversation = conversation_create(persona="elion", title="long branch")
    rows, parent = [], None
    for seq in range(1, count + 1):
        message = Message(
            id=uuid.uuid4(), conversation=conversation, parent_id=parent, seq=seq,
            role="user" if seq % 2 else "assistant", content=f"turn {seq} " + "words of a turn " * 12,
        )
        rows.append(message)
        parent = message.id
    Message.objects.bulk_create(rows, batch_size=2000)
    Conversation.objects.filter(pk=conversation.pk).update(head_id=parent, last_seq=count)
    conversation.refresh_from_db()
    return conversation


def unchecked_window(conversation) -> list:
    """The newest window as the walk read it before its last step was checked: ids only, then the rows."""
    from django.db import connection

    from transcript import branch_window as bw

    sql = bw._walk_sql("SELECT id FROM walk ORDER BY depth")
    with connection.cursor() as cursor:
        cursor.execute(sql, [bw._prep(conversation.head_id), bw._prep(conversation.pk), LIMIT, 0])
        nearest_first = [bw._uuid(value) for (value,) in cursor.fetchall()]
    return bw._rows(conversation, list(reversed(nearest_first[:LIMIT])))


def python_window(conversation) -> list:
    from transcript.tree import tree_messages, walk_up

    walked = list(islice(walk_up(tree_messages(conversation), conversation.head_id), LIMIT + 1))
    return list(reversed(walked[:LIMIT]))


def python_tokens(conversation) -> int:
    from continuity.rules.request_policy import estimate_tokens
    from transcript.tree import tree_messages, walk_to_root

    return sum(estimate_tokens(m.content) for m in walk_to_root(tree_messages(conversation), conversation.head_id))


def measure(conversation, rounds: int) -> dict[str, tuple[float, int]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from transcript.branch_window import branch_token_estimate, branch_window_newest

    ways = {
        "window, SQL walk": lambda: [m.id for m in branch_window_newest(conversation, limit=LIMIT).messages],
        "window, SQL walk unchecked": lambda: [m.id for m in unchecked_window(conversation)],
        "window, walk_up in Python": lambda: [m.id for m in python_window(conversation)],
        "whole branch, SQL walk": lambda: branch_token_estimate(conversation, ("user", "assistant")),
        "whole branch, walk_up": lambda: python_tokens(conversation),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    statements: dict[str, int] = {}
    answers: dict[str, object] = {}
    for _ in range(rounds):
        for name, way in ways.items():
            with CaptureQueriesContext(connection) as queries:
                started = time.perf_counter()
                answers[name] = way()
                times[name].append((time.perf_counter() - started) * 1000)
            statements[name] = len(queries)
    windows = {answers[name] == answers["window, SQL walk"] for name in ways if name.startswith("window")}
    if windows != {True} or answers["whole branch, SQL walk"] != answers["whole branch, walk_up"]:
        raise SystemExit("the ways disagree")
    return {name: (statistics.median(times[name]), statements[name]) for name in ways}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="elion-bench-walk-"))
    database_url = os.environ.get("DATABASE_URL")
    setup_django(data_dir, database_url)
    try:
        from django.db import connection

        conversation = build(args.messages)
        results = measure(conversation, args.rounds)
        print(f"{connection.vendor}, one branch of {args.messages} messages, median of {args.rounds} rounds")
        print("| way | ms | statements |")
        print("|---|---|---|")
        for name, (ms, count) in results.items():
            print(f"| {name} | {ms:.2f} | {count} |")
        sql, unchecked, python = (results[n][0] for n in ("window, SQL walk", "window, SQL walk unchecked",
                                                          "window, walk_up in Python"))
        whole_sql, whole_python = results["whole branch, SQL walk"][0], results["whole branch, walk_up"][0]
        print(f"window: checked / unchecked SQL walk {sql / unchecked:.2f}x; Python walk_up / SQL walk {python / sql:.1f}x")
        print(f"whole branch: walk_up / SQL walk {whole_python / whole_sql:.1f}x")
    finally:
        in_process_bench_close(None, None, data_dir)


if __name__ == "__main__":
    main()
