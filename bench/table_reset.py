"""What ending a committing test costs: Django's flush against tests/support/table_reset.py, side by side.

After every test that commits (`transactional_db`, the live servers) the tables are emptied. Django's
TransactionTestCase runs `manage.py flush` (PostgreSQL: one TRUNCATE of every table; both databases: the
post_migrate signal re-creating content types and permissions). The suite's reset deletes the rows of
every table but the two `migrate` alone writes, in one transaction. This bench fills a few threads (so
triggers and foreign keys have rows to follow), empties the tables one way, then the other, alternating
for --rounds rounds in one run, and prints per way the median wall time, the CPU time of this process,
the statements sent, and the ratios.

    .venv/bin/python -m bench.table_reset                     # SQLite
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.table_reset; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                 # PostgreSQL (server CPU not in "cpu")

A benchmark, not a test: it fails only when a way leaves a row behind in a table the app writes.
"""

from __future__ import annotations

import argparse
import os
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


def fill(threads: int) -> None:
    from tests.support.factories import thread

    for number in range(threads):
        thread(("user", f"Is the lighthouse lit? {number}"), ("assistant", "Every night, over the harbour."))


def django_flush() -> None:
    from django.core.management import call_command

    call_command("flush", interactive=False, verbosity=0, reset_sequences=False, allow_cascade=False)


def suite_reset() -> None:
    from django.db import DEFAULT_DB_ALIAS

    from tests.support.table_reset import empty_tables

    empty_tables(DEFAULT_DB_ALIAS)


def rows_left() -> int:
    from django.db import connection

    from tests.support.table_reset import emptied_tables

    with connection.cursor() as cursor:
        total = 0
        for table in emptied_tables(connection):
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            total += cursor.fetchone()[0]
    return total


def once(way, threads: int) -> tuple[float, float, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    fill(threads)
    with CaptureQueriesContext(connection) as queries:
        wall, cpu = time.perf_counter(), time.process_time()
        way()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if left := rows_left():
        raise SystemExit(f"{way.__name__} left {left} rows in the tables the app writes")
    return wall, cpu, len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=3, help="threads (two messages each) filled before each reset")
    args = parser.parse_args()

    server_url = os.environ.get("DATABASE_URL") or None
    data_dir = Path(tempfile.mkdtemp(prefix="elion-table-reset-"))
    drop = None
    try:
        database_url = None
        if server_url:
            from bench.servers import pg_create_database

            database_url, drop = pg_create_database(server_url)
        setup_django(data_dir, database_url)
        from django.db import connection

        print(f"database: {connection.vendor}; {args.rounds} rounds, {args.threads} threads filled before each reset")
        ways = {"Django flush": django_flush, "suite reset (DELETE)": suite_reset}
        results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in ways}
        for round_number in range(args.rounds + 1):
            order = list(ways) if round_number % 2 else list(reversed(ways))
            for name in order:
                figures = once(ways[name], args.threads)
                if round_number:  # round 0 warms both up
                    results[name].append(figures)
        medians = {}
        for name, figures in results.items():
            wall = statistics.median(f[0] for f in figures)
            cpu = statistics.median(f[1] for f in figures)
            statements = max(f[2] for f in figures)
            medians[name] = (wall, cpu, statements)
            print(f"{name:22} median {wall * 1000:7.1f} ms wall, {cpu * 1000:6.1f} ms cpu, {statements} statements")
        (flush_wall, flush_cpu, flush_n), (reset_wall, reset_cpu, reset_n) = medians.values()
        print(f"ratio flush / reset: wall x{flush_wall / reset_wall:.1f}, cpu x{flush_cpu / reset_cpu:.1f}, "
              f"statements x{flush_n / reset_n:.1f}")
    finally:
        in_process_bench_close(server_url, drop, data_dir)


if __name__ == "__main__":
    main()
