"""1,000 check-ins due in the same minute (issue 44): the time until every reply is stored, every check-in once,
and what they cost an owner's send made meanwhile.

One run, side by side: the scripted provider and Daphne as processes, one django-q2 cluster (`qcluster`,
ELION_QUEUE_WORKERS workers), a fresh data dir (SQLite, or `--database-url`). Printed:

1. *idle*: the owner's send, time to first delta (`--sends` of them, in a conversation of their own), with the
   cluster running and no check-in due;
2. *busy*: `--count` check-ins ("a new chat each time") made due at once and dispatched (the minute's task,
   queued here as the Schedule would); the same sends, one every `--gap` seconds, while they run; then the
   seconds from the dispatch until every run has stored its reply;
3. the ratio busy / idle of the median time to first delta, and the exactly-once check: runs, triggers and
   replies per check-in (each must be exactly 1).

Web Push is not sent here (it is wired into `announce_check_in_reply` at merge); its cost is not counted.

    .venv/bin/python -m bench.check_in_load --count 1000
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import suppress
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.servers import CLEARED_ENV, app_env, start_daphne, start_provider, stop_process  # noqa: E402


def _first_delta_seconds(client, conversation: str) -> float:
    """Seconds from the send until its first delta (the stream is then read to its end)."""
    started = time.monotonic()
    first = None
    with client.stream("POST", f"/api/conversations/{conversation}/messages/", json={"content": "How are you?"}) as r:
        if r.status_code != 200:
            raise RuntimeError(f"send answered {r.status_code}: {r.read()[:300]!r}")
        for line in r.iter_lines():
            if first is None and line == "event: delta":
                first = time.monotonic() - started
    if first is None:
        raise RuntimeError("the send streamed no delta")
    return first


def _sends(client, count: int, gap: float) -> list[float]:
    times = []
    for _ in range(count):
        conversation = client.post("/api/conversations/", json={}).json()["id"]
        times.append(_first_delta_seconds(client, conversation))
        time.sleep(gap)
    return times


def _seed(count: int) -> None:
    from django.utils import timezone

    from check_ins.models import CheckIn

    later = timezone.now() + timezone.timedelta(days=1)
    CheckIn.objects.bulk_create(
        CheckIn(title=f"Check-in {n}", brief=f"ask how plan {n} went", schedule_kind="daily", schedule_at="09:00",
                time_zone="UTC", target_kind="new_chat", next_run_at=later)
        for n in range(count)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--sends", type=int, default=7)
    parser.add_argument("--gap", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args()

    import httpx

    tmp = Path(tempfile.mkdtemp(prefix="elion-check-in-load."))
    provider = daphne = cluster = None
    try:
        provider, provider_url = start_provider(tmp)
        env = app_env(tmp / "data", args.database_url, provider_url)
        env["ELION_QUEUE_WORKERS"] = str(args.workers)
        (tmp / "data").mkdir()
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        # This process reads the bench's database too: the shell's DATABASE_URL (and the rest of what the app's
        # environment clears) must not outlive `env`, or the seed goes where the servers are not.
        for name in CLEARED_ENV:
            os.environ.pop(name, None)
        os.environ.update(env)
        import django

        django.setup()
        from django.utils import timezone
        from django_q.tasks import async_task

        from check_ins.models import CheckIn, CheckInRun, RunStatus
        from transcript.models import Message, MessageKind, Role

        _seed(args.count)
        daphne, base = start_daphne(tmp, env, False)
        cluster = subprocess.Popen([sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=env,
                                   stdout=open(tmp / "qcluster.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
                                   start_new_session=True)
        with httpx.Client(base_url=base, timeout=120) as client:
            _sends(client, 1, 0)  # warm: the first request of a process pays its imports
            idle = _sends(client, args.sends, args.gap)

            CheckIn.objects.update(next_run_at=timezone.now() - timezone.timedelta(seconds=1))
            dispatched = time.monotonic()
            async_task("check_ins.tasks.check_ins_run_due")
            busy = _sends(client, args.sends, args.gap)
            finished = (RunStatus.DONE, RunStatus.FAILED)
            while CheckInRun.objects.filter(status__in=finished).count() < args.count:
                if time.monotonic() - dispatched > args.timeout:
                    raise RuntimeError("timed out: " + (tmp / "qcluster.log").read_text()[-2000:])
                if cluster.poll() is not None:
                    raise RuntimeError("the cluster stopped: " + (tmp / "qcluster.log").read_text()[-2000:])
                time.sleep(0.5)
            all_stored = time.monotonic() - dispatched
        time.sleep(2)  # any late duplicate would show now

        runs = Counter(CheckInRun.objects.values_list("check_in_id", flat=True))
        triggers = Counter(
            metadata["check_in"]["id"]
            for metadata in Message.objects.filter(kind=MessageKind.CHECK_IN_TRIGGER).values_list("metadata", flat=True)
        )
        replies = Message.objects.filter(role=Role.ASSISTANT, parent__kind=MessageKind.CHECK_IN_TRIGGER)
        statuses = Counter(CheckInRun.objects.values_list("status", flat=True))
        once = (len(runs) == args.count and set(runs.values()) == {1} and len(triggers) == args.count
                and set(triggers.values()) == {1} and replies.count() == args.count)

        idle_median, busy_median = statistics.median(idle), statistics.median(busy)
        database = "PostgreSQL" if args.database_url else "SQLite"
        print(f"check-ins: {args.count}, workers: {args.workers}, database: {database}")
        print("| | owner's send, time to first delta (median of "
              f"{args.sends}) | min | max |")
        print("|---|---|---|---|")
        print(f"| idle (no check-in due) | {idle_median * 1000:.0f} ms | {min(idle) * 1000:.0f} | {max(idle) * 1000:.0f} |")
        print(f"| {args.count} check-ins running | {busy_median * 1000:.0f} ms | {min(busy) * 1000:.0f} | "
              f"{max(busy) * 1000:.0f} |")
        print(f"ratio busy / idle: {busy_median / idle_median:.2f}x")
        print(f"every reply stored after: {all_stored:.1f} s ({args.count / all_stored:.1f} check-ins/s)")
        print(f"runs by status: {dict(statuses)}; replies: {replies.count()}")
        print(f"every check-in exactly once: {'yes' if once else 'NO'}")
        if not once:
            sys.exit(1)
    finally:
        for process in (cluster, daphne, provider):
            if process is cluster and process is not None:
                with suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
            stop_process(process)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
