"""Exporting and forking a long thread: peak memory of the Markdown and JSON exports, and fork time.

Builds one thread of N live-branch messages (default 10,000; user turns of ~200
characters, replies of ~1,500 with tool parts and usage metadata, and a
rewound-away sibling every 50 turns so the tree is not a straight line), then
runs each case in a fresh process against the same database:

- `export_markdown`, `export_json`: `GET /api/conversations/{id}/export/` through
  Django's ASGI handler (what Daphne runs), reading the body chunk by chunk as a
  client would. Prints the process's peak resident memory above its idle peak
  (VmHWM, after a warm-up request) and the seconds taken.
- `fork`: `conversation_fork` of the head (the whole live branch), timed.
- `messages_page`, `messages_around`: `GET …/messages/?limit=50` (and `&around=` a
  user turn half way through), median of 15 requests. A baseline tree
  without paging answers the whole branch: what a client got before.

With `--baseline DIR` (a checkout of an earlier commit, e.g. `git archive d7966a1`)
every case also runs in that tree, side by side, and the ratios are printed.

    .venv/bin/python -m bench.export_memory [--messages 10000] [--baseline DIR]

On PostgreSQL: `eval "$(scripts/pg_tmp.sh start)"` first (DATABASE_URL is honoured).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("messages_page", "messages_around", "export_markdown", "export_json", "fork")
PAGE_REQUESTS = 15
USER_TEXT = "How did the evening go, and what did you make of the letter? " * 3
REPLY_TEXT = (
    "The evening went quietly. I read the letter twice; the second time the tone felt warmer than the first, "
    "mostly because of the last paragraph, where she writes about the garden. "
) * 8


def _peak_kib() -> int:
    """This process's peak resident memory (VmHWM, KiB); not ru_maxrss, which a child inherits."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _setup(data_dir: str) -> None:
    os.environ["ELION_DATA_DIR"] = data_dir
    os.environ["DJANGO_SETTINGS_MODULE"] = "elion.settings"
    os.environ["ELION_LOG_LEVEL"] = "WARNING"
    for name in ("ELION_TESTING", "DJANGO_DEBUG", "ELION_OWNER_PASSWORD"):
        os.environ.pop(name, None)
    import django

    django.setup()


def build(messages: int) -> str:
    """One conversation with `messages` live-branch messages; returns its id."""
    from django.core.management import call_command
    from django.db import transaction

    call_command("migrate", verbosity=0)
    from conversations.services.threads.thread_writes import conversation_create
    from transcript.append import APPENDED_FIELDS, message_append
    from transcript.provider.binding import configured_provider
    from transcript.search_index import message_search_index_sync

    binding = configured_provider().binding()
    with transaction.atomic():
        conversation = conversation_create(persona="elion", title="A long evening")
    parent = None
    turns = messages // 2
    with transaction.atomic():
        for turn in range(turns):
            user = message_append(
                conversation=conversation, parent=parent, role="user", binding=binding, make_head=True,
                content=f"{turn}: {USER_TEXT}",
            )
            if turn % 50 == 25:  # a reply the owner retried: its sibling stays off the live branch
                message_append(
                    conversation=conversation, parent=user, role="assistant", binding=binding, make_head=False,
                    content="An earlier draft of the reply.",
                )
            parts = (
                [{"type": "tool_call", "call_id": f"c{turn}", "name": "archive_search", "arguments": "{\"q\": \"letter\"}"},
                 {"type": "tool_result", "call_id": f"c{turn}", "output": "two passages"}]
                if turn % 10 == 0 else []
            )
            parent = message_append(
                conversation=conversation, parent=user, role="assistant", binding=binding, make_head=True,
                content=f"{turn}: {REPLY_TEXT}", parts=parts,
                metadata={"usage": {"input_tokens": 1200 + turn, "output_tokens": 380}},
            )
        conversation.save(update_fields=APPENDED_FIELDS)
    message_search_index_sync()  # as after every reply: the thread is searchable before it is forked
    return str(conversation.id)


def child(case: str, conversation_id: str) -> None:
    _setup(os.environ["ELION_DATA_DIR"])
    from asgiref.sync import async_to_sync
    from django.conf import settings
    from django.db import connection
    from django.test import AsyncClient

    from transcript.models import Conversation, Message

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]  # the test client's host name, as in the tests
    from conversations.services.threads.fork import conversation_fork

    conversation = Conversation.objects.get(pk=conversation_id)
    # Warm up: the first request imports the URL conf, DRF and the views; that is not the export's cost.
    async_to_sync(AsyncClient().get)(f"/api/conversations/{conversation_id}/")
    connection.close()
    idle = _peak_kib()
    started = time.perf_counter()
    if case.startswith("messages_"):
        # A baseline tree ignores `limit` and `around`: it answers the whole branch, as clients got before paging.
        middle = Message.objects.filter(conversation_id=conversation_id, role="user").order_by("seq")[
            conversation.last_seq // 4
        ]
        query = "limit=50" if case == "messages_page" else f"limit=50&around={middle.id}"
        timings, size = [], 0
        for _ in range(PAGE_REQUESTS):
            begun = time.perf_counter()
            response = async_to_sync(AsyncClient().get)(f"/api/conversations/{conversation_id}/messages/?{query}")
            timings.append(time.perf_counter() - begun)
            size = len(response.content)
            if response.status_code != 200:
                raise SystemExit(f"messages answered {response.status_code}")
        timings.sort()
        outcome = f"200: {len(response.json()['results']):,} messages, {size:,} bytes; median of {PAGE_REQUESTS}"
        print(json.dumps({
            "outcome": outcome, "seconds": round(timings[len(timings) // 2], 4),
            "rss_above_idle_mb": round((_peak_kib() - idle) / 1024, 1),
        }))
        return
    if case == "fork":
        destination, _ = conversation_fork(
            conversation_id=conversation.id, message_id=conversation.head_id, idempotency_key=f"bench-{time.time_ns()}"
        )
        outcome = f"forked: {destination.last_seq:,} messages"
    else:
        fmt = case.removeprefix("export_")

        async def fetch() -> tuple[int, int]:
            response = await AsyncClient().get(f"/api/conversations/{conversation_id}/export/?format={fmt}")
            if response.status_code != 200:
                raise SystemExit(f"export answered {response.status_code}")
            if not response.streaming:
                return response.status_code, len(response.content)
            size = 0
            async for chunk in response.streaming_content:
                size += len(chunk)
            return response.status_code, size

        status, size = async_to_sync(fetch)()
        outcome = f"{status}: {size:,} bytes"
    seconds = time.perf_counter() - started
    print(json.dumps({
        "outcome": outcome, "seconds": round(seconds, 3), "rss_above_idle_mb": round((_peak_kib() - idle) / 1024, 1),
    }))


def run_case(tree: Path, case: str, conversation_id: str, env: dict) -> dict:
    # This script, run from `tree`: its code is imported from there (PYTHONPATH), so a baseline
    # checkout needs no copy of the bench.
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", case, conversation_id],
        cwd=tree, env={**env, "PYTHONPATH": str(tree)}, capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"{case} in {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--baseline", type=Path, help="an earlier tree to run side by side (same schema)")
    args = parser.parse_args()
    data_dir = os.environ.get("ELION_DATA_DIR") or tempfile.mkdtemp(prefix="elion-bench-export-")
    _setup(data_dir)
    started = time.perf_counter()
    conversation_id = build(args.messages)
    database = "PostgreSQL" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "SQLite"
    print(f"{database}: one thread of {args.messages:,} live-branch messages built in {time.perf_counter() - started:.1f} s")
    env = {**os.environ, "ELION_DATA_DIR": data_dir}
    trees = [("this", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    print(f"{'case':16} {'tree':9} {'seconds':>8} {'peak RSS above idle':>20}  outcome")
    for case in CASES:
        rows = {}
        for label, tree in trees:
            row = rows[label] = run_case(tree, case, conversation_id, env)
            print(f"{case:16} {label:9} {row['seconds']:>8} {row['rss_above_idle_mb']:>17} MB  {row['outcome']}")
        if "baseline" in rows:
            this, base = rows["this"], rows["baseline"]
            # Figures below 0.1 count as 0.1 so the ratios stay finite.
            print(f"{'':16} {'ratio':9} baseline/this: time {base['seconds'] / max(this['seconds'], 0.001):.1f}x, "
                  f"peak RSS {base['rss_above_idle_mb'] / max(this['rss_above_idle_mb'], 0.1):.1f}x")


if __name__ == "__main__":
    main()
