"""Settings -> Usage: the time to total a year of provider-reported usage, and how it grows.

Loads `--replies` (100,000) assistant replies with `metadata.usage` (and as many user turns, which
carry none) over the last 365 days, in `--threads` (1,000) conversations, each reply's metadata also
holding request-size diagnostics as real replies do. Then, side by side in alternating rounds:

- app: `operations.usage.usage_report()` (31 days, 12 months): one query of (created_at,
  metadata.usage) for assistant replies in the window, read in chunks, totalled in Python;
- db: the same totals computed by the database (`KT()` + `Cast` + `Sum` over the figures that are not
  JSON null, grouped by `TruncDate` / `TruncMonth` in the server's time zone), the alternative the app
  does not use: a stored value that is not an integer would make PostgreSQL's cast fail the whole
  page, and SQLite casts a JSON null to 0 unless it is filtered out as here.

It checks both give the same totals, then prints medians, the db/app ratio, statements per report,
and the app's time at a tenth of the replies (growth). A benchmark: it asserts nothing about timing.

    .venv/bin/python -m bench.usage_report                                   # SQLite
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.usage_report; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                                 # PostgreSQL
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import setup_django  # noqa: E402
from bench.servers import in_process_bench_close  # noqa: E402

BATCH = 5_000
DIAGNOSTICS = {"history_tokens": 1234, "static_prompt_tokens": 900, "handoff_tokens": 0, "dynamic_context_tokens": 40,
               "tool_definition_tokens": 300, "total_input_tokens": 2474, "input_budget_tokens": 200000,
               "remaining_tokens": 197526, "trimmed_messages": 0}


def load(replies: int, threads: int, seed: int) -> None:
    from django.db import transaction

    from transcript.models import Conversation, Message, Role

    rng = random.Random(seed)
    per_thread = -(-replies // threads)
    started = time.perf_counter()
    with transaction.atomic():
        conversations = Conversation.objects.bulk_create(
            [Conversation(title=f"Thread {i}", last_seq=2 * per_thread) for i in range(threads)], batch_size=BATCH
        )
        rows, made = [], 0
        for conversation in conversations:
            for turn in range(per_thread):
                if made == replies:
                    break
                made += 1
                usage = {"input_tokens": rng.randrange(4_000, 30_000),
                         "cached_input_tokens": rng.choice([None, rng.randrange(0, 4_000)]),
                         "output_tokens": rng.randrange(20, 2_000), "reasoning_tokens": rng.choice([None, 64, 512])}
                rows.append(Message(conversation=conversation, seq=2 * turn + 1, role=Role.USER, content="q"))
                rows.append(Message(conversation=conversation, seq=2 * turn + 2, role=Role.ASSISTANT, content="a",
                                    metadata={"usage": usage, "diagnostics": DIAGNOSTICS}))
                if len(rows) >= BATCH:
                    Message.objects.bulk_create(rows, batch_size=BATCH)
                    rows = []
        Message.objects.bulk_create(rows, batch_size=BATCH)
    print(f"loaded {replies:,} replies and {replies:,} user turns in {threads:,} threads "
          f"in {time.perf_counter() - started:.1f} s")


def spread_times(seed: int, now: datetime) -> None:
    """bulk_create stamps created_at now (auto_now_add): spread the replies over the year before `now`."""
    from django.db import connection, transaction

    from transcript.models import Message, Role

    table = connection.ops.quote_name(Message._meta.db_table)
    rng = random.Random(seed + 1)
    ids = list(Message.objects.filter(role=Role.ASSISTANT).values_list("pk", flat=True))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {table} SET created_at = %s WHERE id = %s",
            [(now - timedelta(seconds=rng.randrange(365 * 86_400)), Message._meta.pk.get_db_prep_value(pk, connection))
             for pk in ids],
        )


def db_report(days: int, months: int, now: datetime) -> dict:
    import datetime as dt

    from django.db.models import BigIntegerField, Count, DateField, Q, Sum
    from django.db.models.fields.json import KT
    from django.db.models.functions import Cast, TruncDate, TruncMonth
    from django.utils import timezone

    from operations.usage import USAGE_KEYS, _first_of_month_back
    from transcript.models import Message, Role

    zone = timezone.get_default_timezone()
    today = now.astimezone(zone).date()
    first_day = today - dt.timedelta(days=days - 1)
    first_month = _first_of_month_back(today, months)
    until = dt.datetime.combine(today + dt.timedelta(days=1), dt.time.min, tzinfo=zone)
    base = Message.objects.filter(role=Role.ASSISTANT, created_at__lt=until, metadata__has_key="usage")
    # JSON null must not count as 0 (SQLite casts the text 'null' to 0): sum only the reported figures.
    sums = {
        key: Sum(Cast(KT(f"metadata__usage__{key}"), BigIntegerField()), filter=~Q(**{f"metadata__usage__{key}": None}))
        for key in USAGE_KEYS
    }
    day_rows = (
        base.filter(created_at__gte=dt.datetime.combine(first_day, dt.time.min, tzinfo=zone))
        .annotate(period=TruncDate("created_at", tzinfo=zone)).values("period")
        .annotate(replies=Count("pk"), **sums).order_by("-period")
    )
    month_rows = (
        base.filter(created_at__gte=dt.datetime.combine(first_month, dt.time.min, tzinfo=zone))
        .annotate(period=TruncMonth("created_at", tzinfo=zone, output_field=DateField())).values("period")
        .annotate(replies=Count("pk"), **sums).order_by("-period")
    )

    def rows(queryset: object, name: str, label: object) -> list[dict]:
        return [{name: label(row["period"]), "replies": row["replies"], **{k: row[k] for k in USAGE_KEYS}}
                for row in queryset]

    return {"days": rows(day_rows, "date", lambda d: d.isoformat()),
            "months": rows(month_rows, "month", lambda d: f"{d.year:04d}-{d.month:02d}")}


def app_report(now: datetime) -> dict:
    from operations.usage import USAGE_KEYS, usage_report

    report = usage_report(now=now).as_dict()
    keep = ("replies", *USAGE_KEYS)
    return {"days": [{"date": r["date"], **{k: r[k] for k in keep}} for r in report["days"]],
            "months": [{"month": r["month"], **{k: r[k] for k in keep}} for r in report["months"]]}


def timed(function: object, *args: object) -> tuple[float, int, dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        started = time.perf_counter()
        result = function(*args)
        elapsed = time.perf_counter() - started
    return elapsed, len(queries), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replies", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()

    server_url = os.environ.get("DATABASE_URL") or None
    data_dir = Path(tempfile.mkdtemp(prefix="elion-usage-"))
    drop = None
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    try:
        database_url = None
        if server_url:
            from bench.servers import pg_create_database

            database_url, drop = pg_create_database(server_url)
        setup_django(data_dir, database_url)
        from django.db import connection

        print(f"database: {connection.vendor}")
        results = {}
        for size in (args.replies // 10, args.replies):
            from transcript.models import Conversation

            Conversation.objects.all().delete()
            load(size, args.threads, args.seed)
            spread_times(args.seed, now)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
            app = db = None
            times = {"app": [], "db": []}
            counts = {"app": set(), "db": set()}
            for round_number in range(args.rounds + 1):
                sides = [("app", app_report, (now,)), ("db", db_report, (31, 12, now))]
                if round_number % 2:
                    sides.reverse()
                for name, function, call_args in sides:
                    elapsed, statements, result = timed(function, *call_args)
                    if round_number:  # the first round warms caches
                        times[name].append(elapsed)
                        counts[name].add(statements)
                    if name == "app":
                        app = result
                    else:
                        db = result
            if app != db:
                raise SystemExit("the app's totals and the database's differ")
            replies_in_months = sum(row["replies"] for row in app["months"])
            results[size] = {name: statistics.median(values) for name, values in times.items()}
            print(f"{size:>8,} replies ({replies_in_months:,} in the 12 months, {len(app['days'])} days): "
                  f"app median {results[size]['app'] * 1000:8.1f} ms (statements {sorted(counts['app'])}), "
                  f"db median {results[size]['db'] * 1000:8.1f} ms (statements {sorted(counts['db'])}), "
                  f"db/app x{results[size]['db'] / results[size]['app']:.2f}")
        small, large = args.replies // 10, args.replies
        print(f"growth {large:,}/{small:,} replies: app x{results[large]['app'] / results[small]['app']:.1f}, "
              f"db x{results[large]['db'] / results[small]['db']:.1f}")
    finally:
        in_process_bench_close(server_url, drop, data_dir)


if __name__ == "__main__":
    main()
