"""What a scheduled backup costs (issue 42): its time and peak memory, and what a send waits while it runs.

One run, one instance (SQLite in a fresh data dir, or --database-url for an empty PostgreSQL database):

1. builds a quarter of the instance (conversations with short messages, 4 MiB incompressible attachment
   blobs), and takes one backup the way the schedule does (`runs.backup_start` + `runs.backup_run`:
   written, encrypted with a passphrase, stored in a folder, fetched back, decrypted, restored into a
   scratch instance and checked), in a fresh process: its seconds and its peak memory above its own idle
   (VmHWM), and the scratch restore's peak (its own process);
2. builds the rest (default 10,000 conversations, 1 GiB of blobs) and does the same again: memory flat
   in archive size means the two peaks match while the archive grows four times;
3. against Daphne and the scripted provider: the time to first delta of sends with no backup running,
   then of sends made one after another while the full-size backup runs, side by side (median, p95).

    .venv/bin/python -m bench.backup_cost                                   # full size, SQLite
    .venv/bin/python -m bench.backup_cost --conversations 1000 --blob-mib 64 --sends 10   # quick
    .venv/bin/python -m bench.backup_cost --database-url postgres://…/postgres            # PostgreSQL

A benchmark, not a test: it asserts nothing about timing. It fails only when a backup is not verified
or a send does not stream.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.servers import (  # noqa: E402
    BenchError,
    app_env,
    percentile,
    pg_create_database,
    pg_drop_database,
    start_daphne,
    start_provider,
    stop_process,
)

BLOB_MIB = 4
PASSPHRASE = "bench passphrase"
QUICK_REPLY = {"chunks": ["Quick", " scripted", " reply."]}


def _peak_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def populate(start: int, stop: int, blobs_from: int, blobs_to: int) -> None:
    """Conversations `start`…`stop` with four messages each; blobs `blobs_from`…`blobs_to` of BLOB_MIB each."""
    from django.db import transaction

    from transcript.attachments import store
    from transcript.models import Conversation, Message

    batch = 500
    for first in range(start, stop, batch):
        with transaction.atomic():
            conversations = Conversation.objects.bulk_create(
                [Conversation(title=f"Conversation {index}") for index in range(first, min(first + batch, stop))]
            )
            rows, heads = [], {}
            for conversation in conversations:
                parent = None
                for seq in range(1, 5):
                    row = Message(id=uuid.uuid4(), conversation=conversation, parent_id=parent, seq=seq,
                                  role="user" if seq % 2 else "assistant",
                                  content=f"Message {seq} of {conversation.title}: the tide came in at dawn.")
                    rows.append(row)
                    parent = row.id
                heads[conversation.pk] = parent
            Message.objects.bulk_create(rows, batch_size=1000)
            for conversation in conversations:
                Conversation.objects.filter(pk=conversation.pk).update(head_id=heads[conversation.pk], last_seq=4)
    ids = list(Conversation.objects.order_by("created_at", "pk").values_list("pk", flat=True)[blobs_from:blobs_to])
    for conversation_id in ids:
        data = os.urandom(BLOB_MIB << 20)
        store.write_bytes(store.conversation_store(conversation_id), data, hashlib.sha256(data).hexdigest())


def child() -> None:
    """One scheduled-style backup in this process; prints its figures as JSON."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elion.settings")
    import resource

    import django

    django.setup()
    from operations.backup import runs

    idle = _peak_kib()
    started = time.perf_counter()
    record = runs.backup_run(runs.backup_start())
    seconds = time.perf_counter() - started
    if record.status != "verified":
        raise BenchError(f"the backup was not verified: {record.failure}")
    print(json.dumps({
        "seconds": round(seconds, 1),
        "peak_above_idle_mb": round((_peak_kib() - idle) / 1024, 1),
        "scratch_restore_peak_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
        "size_mb": round(record.size / 1e6, 1),
        "rows": sum(record.counts["rows"].values()),
        "blobs": record.counts["blobs"],
    }))


def backup_process(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bench.backup_cost", "--child"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def backup_figures(process: subprocess.Popen) -> dict:
    out, err = process.communicate()
    if process.returncode != 0:
        raise BenchError(f"the backup process failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


async def send_ttfd(client, control) -> float:
    await control.post("/_control/clear")
    await control.post("/_control/script", json=[QUICK_REPLY])
    created = await client.post("/api/conversations/", json={"persona": "elion"})
    if created.status_code != 201:
        raise BenchError(f"create answered {created.status_code}: {created.text[:300]}")
    start, first, done = time.perf_counter(), None, None
    event = None
    async with client.stream("POST", f"/api/conversations/{created.json()['id']}/messages/",
                             json={"content": "How was the harbour this morning?"}) as response:
        if response.status_code != 200:
            raise BenchError(f"send answered {response.status_code}")
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == "delta" and first is None:
                first = time.perf_counter()
            elif line.startswith("data: ") and event == "done":
                done = json.loads(line[6:])
    if first is None or not done or done.get("status") != "complete":
        raise BenchError(f"the send did not stream a complete reply: {done}")
    return first - start


async def sends(app_url: str, provider_url: str, count: int | None, until: subprocess.Popen | None) -> list[float]:
    """`count` sends one after another, or as many as fit while `until` runs."""
    import httpx

    found: list[float] = []
    async with httpx.AsyncClient(base_url=app_url, timeout=120) as client, \
            httpx.AsyncClient(base_url=provider_url.rsplit("/v1", 1)[0], timeout=10) as control:
        while (count is not None and len(found) < count) or (until is not None and until.poll() is None):
            found.append(await send_ttfd(client, control))
    return found


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:7.1f} ms, p95 {percentile(values, 95) * 1000:7.1f} ms, n={len(values)}"


def main() -> None:
    if sys.argv[1:] == ["--child"]:
        child()
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--blob-mib", type=int, default=1024, help="MiB of attachment blobs at full size")
    parser.add_argument("--sends", type=int, default=20, help="sends with no backup running")
    parser.add_argument("--database-url", default=None, help="PostgreSQL URL (a fresh database is made on it)")
    args = parser.parse_args()

    from bench.common import setup_django

    work = Path(tempfile.mkdtemp(prefix="elion-bench-backup-cost-"))
    data_dir = work / "data"
    data_dir.mkdir()
    database_url, drop = (pg_create_database(args.database_url) if args.database_url else (None, None))
    provider = daphne = None
    try:
        setup_django(data_dir, database_url)
        blobs = max(1, args.blob_mib // BLOB_MIB)
        quarter, quarter_blobs = args.conversations // 4, blobs // 4
        populate(0, quarter, 0, quarter_blobs)
        provider, provider_url = start_provider(work)
        env = app_env(data_dir, database_url, provider_url)
        env.update(ELION_BACKUP_PASSPHRASE=PASSPHRASE, ELION_BACKUP_DIR=str(work / "backups"))
        env.pop("ELION_ATTACHMENT_ROOT", None)
        small = backup_figures(backup_process(env))
        populate(quarter, args.conversations, quarter_blobs, blobs)
        daphne, app_url = start_daphne(work, env, instrumented=False)
        asyncio.run(sends(app_url, provider_url, 3, None))  # warm-up
        idle = asyncio.run(sends(app_url, provider_url, args.sends, None))
        running = backup_process(env)
        during = asyncio.run(sends(app_url, provider_url, None, running))
        full = backup_figures(running)
        after = asyncio.run(sends(app_url, provider_url, args.sends, None))
    finally:
        stop_process(daphne)
        stop_process(provider)
        if args.database_url and drop:
            from django.db import connections

            connections.close_all()
            pg_drop_database(args.database_url, drop)
        shutil.rmtree(work, ignore_errors=True)

    database = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{database}; full size {args.conversations:,} conversations x 4 messages, {blobs} blobs of {BLOB_MIB} MiB")
    print(f"{'instance':10} {'rows':>8} {'blobs':>6} {'file MB':>8} {'backup+verify s':>16} "
          f"{'peak above idle MB':>19} {'scratch restore peak MB':>24}")
    for name, figures in (("quarter", small), ("full", full)):
        print(f"{name:10} {figures['rows']:>8,} {figures['blobs']:>6} {figures['size_mb']:>8.1f} "
              f"{figures['seconds']:>16.1f} {figures['peak_above_idle_mb']:>19.1f} {figures['scratch_restore_peak_mb']:>24.1f}")
    print(f"peak full / quarter: {full['peak_above_idle_mb'] / max(small['peak_above_idle_mb'], 0.1):.2f}x "
          f"for a {full['size_mb'] / max(small['size_mb'], 0.1):.1f}x larger file")
    print(f"send, no backup (before): {summary(idle)}")
    print(f"send, during the backup:  {summary(during)}")
    print(f"send, no backup (after):  {summary(after)}")
    baseline = statistics.median(idle + after)
    print(f"during / no backup, median: {statistics.median(during) / baseline:.2f}x; "
          f"p95: {percentile(during, 95) / percentile(idle + after, 95):.2f}x")


if __name__ == "__main__":
    main()
