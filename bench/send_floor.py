"""What a send's window itself costs (issue 40): the physical floor under `bench/years.py`'s added time.

A send reads the stretch of its branch its request can carry (`transcript.branch_rows`: ~2,100–2,400
rows of 200–600 characters under the default 200,000-token budget) and serialises the request built from
it. For each thread of a `bench/years.py` cache entry (its SQLite file, copied first, and `built.json`),
this times in one process, side by side, medians of `--rounds`:

  send       `send_prepare` (the whole composed send up to the provider call; its reply marked done and
             the head rewound after each, so every round measures the same branch);
  statement  the stretch's one statement alone, its rows fetched as the driver gives them (captured from
             a `branch_stretch_up` and executed again): what no design that reads the in-view turns from
             the database can avoid;
  rows       `branch_stretch_up`, the statement with its rows made the send's `StretchMessage`s;
  JSON       `json.dumps` of the request's messages (the SDK's share: `bench/years.py` subtracts it).

and prints the floor: the smallest thread's send plus this thread's statement, over the smallest thread's
send, the least any design reading its window this way could show for `bench/years.py`'s added-time ratio.

    .venv/bin/python -m bench.years --database sqlite --cache /tmp/years   # builds the threads once
    .venv/bin/python -m bench.send_floor --entry /tmp/years/sqlite-<key>
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _median_ms(call, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entry", type=Path, required=True, help="a bench/years.py cache entry (SQLite)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    built = json.loads((args.entry / "built.json").read_text())
    scratch = Path(tempfile.mkdtemp(prefix="send-floor-"))
    try:
        shutil.copy(args.entry / "elion.sqlite3", scratch / "elion.sqlite3")
        os.environ.setdefault("OPENAI_API_KEY", "bench")
        from bench.common import setup_django

        setup_django(scratch, None)
        from django.conf import settings
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from continuity.rules.request_store import STRETCH_MARGIN_TOKENS, trim_step_tokens
        from conversations.sending.commands import SendCommand
        from conversations.sending.prepare import send_prepare
        from transcript.branch_rows import branch_stretch_up
        from transcript.models import Conversation, Message
        from transcript.provider.binding import configured_provider

        # The threads were bound to the bench server's route; this process's provider is bound instead.
        binding = configured_provider().binding()
        Message.objects.exclude(role="system").update(
            provider_id=binding.provider_id, provider_type=binding.provider_type, model=binding.model,
            route_fingerprint=binding.route_fingerprint,
        )
        print("| messages | send ms | stretch rows | statement ms | rows ms | JSON ms | floor ÷ smallest send |")
        print("|---|---|---|---|---|---|---|")
        smallest = None
        for thread in built["threads"]:
            conversation = Conversation.objects.get(pk=thread["conversation_id"])
            head = conversation.head_id

            def send(conversation=conversation, head=head):
                prepared = send_prepare(SendCommand(
                    conversation_id=conversation.id, content="What did we say about the pears in the orchard?"
                ))
                Message.objects.filter(conversation=conversation, status="streaming").update(
                    status="complete", content="Done.", lease_expires_at=None)
                Conversation.objects.filter(pk=conversation.pk).update(head_id=head)
                return prepared

            prepared = send()  # stores the prompt
            span = settings.ELION_INPUT_BUDGET_TOKENS + 2 * trim_step_tokens() + STRETCH_MARGIN_TOKENS
            floor = Message.objects.get(pk=head).branch_tokens - span
            with CaptureQueriesContext(connection) as captured:
                rows = len(branch_stretch_up(conversation.id, head, token_floor=floor))
            statement_sql = captured.captured_queries[-1]["sql"]

            def statement(sql=statement_sql):
                with connection.cursor() as cursor:
                    cursor.execute(sql)
                    return cursor.fetchall()

            sent = _median_ms(send, args.rounds)
            read = _median_ms(statement, args.rounds)
            made = _median_ms(lambda c=conversation, h=head, f=floor: branch_stretch_up(c.id, h, token_floor=f), args.rounds)
            dumped = _median_ms(lambda p=prepared: json.dumps(p.request.messages), args.rounds)
            smallest = sent if smallest is None else smallest
            print(f"| {thread['label']} | {sent:.1f} | {rows:,} | {read:.1f} | {made:.1f} | {dumped:.1f} "
                  f"| ×{(smallest + read) / smallest:.1f} |")
        print(f"\n{args.rounds} rounds, medians; load average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
