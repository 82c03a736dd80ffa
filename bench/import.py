"""Background imports of a large export: throughput and peak resident memory, ChatGPT split vs one member,
and a Claude.ai export of the same size beside them.

Generates one synthetic ChatGPT export (bench/chatgpt_export_build.py, about --megabytes MB of
conversation JSON) twice: as a zip of --members split `conversations-NNN.json` members
and as a zip of one `conversations.json`, the same conversations in the same order; and a
synthetic Claude.ai export zip of the same JSON size (bench/claude_export_build.py: the same
vocabulary and turn sizes, uuid/parent_message_uuid trees with a retried reply, thinking blocks).
Each is imported in a fresh child process on a fresh database (SQLite in a fresh data
dir, or --database-url, emptied first) the way a worker does it: the job is created
with `import_job_create` (the upload saved to the data dir) and then run through the
task function `archive.tasks.run_import_job` directly, slice after slice, in that
process (no HTTP, no qcluster: the figures are the import's own work). The child
reports wall time and CPU time of the run (on a loaded machine the CPU time says more), and
its peak resident memory (VmHWM, reset after
Django is set up) above its idle resident memory.

    .venv/bin/python -m bench.import                    # 200 MB, 4 members
    .venv/bin/python -m bench.import --megabytes 20     # quicker
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

from bench import claude_export_build
from bench.chatgpt_export_build import write_export_zip

ROOT = Path(__file__).resolve().parents[1]


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(path: Path, data_dir: Path, database_url: str | None, kind: str) -> None:
    from bench.common import setup_django

    setup_django(data_dir, database_url)
    from django.core.files import File

    from archive import tasks
    from archive.models import ArchiveDocument, ImportJob
    from archive.services.import_jobs import import_job_create

    ArchiveDocument.objects.all().delete()
    ImportJob.objects.all().delete()
    # The peak from here on: what migrating cost is not the import's.
    Path("/proc/self/clear_refs").write_text("5")
    idle = _status_kib("VmRSS")
    started = time.perf_counter()
    with path.open("rb") as stream:
        job = import_job_create(kind=kind, uploads=[File(stream, name=path.name)],
                                options={"collection": "conversations"})
    saved = time.perf_counter() - started
    slices = 0
    started, cpu = time.perf_counter(), time.process_time()
    while tasks.run_import_job(str(job.pk)) == "running":
        slices += 1
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    job.refresh_from_db()
    print(json.dumps({
        "state": job.state, "total": job.total, "conversations": job.result.get("conversations"),
        "seconds": seconds, "cpu_seconds": cpu, "save_seconds": saved, "slices": slices + 1,
        "peak_above_idle_mb": (_status_kib("VmHWM") - idle) / 1024, "idle_mb": idle / 1024,
    }))


def run_one(path: Path, database_url: str | None, kind: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="elion-bench-import-") as data_dir:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "bench.import", "--child", str(path), "--data-dir", data_dir, "--kind", kind]
        if database_url:
            command += ["--database-url", database_url]
        out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"child failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=200.0, help="conversation JSON to generate (MB)")
    parser.add_argument("--members", type=int, default=4, help="split members of the first shape")
    parser.add_argument("--database-url", default=None, help="PostgreSQL instead of a fresh SQLite (emptied first)")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--kind", default="chatgpt", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.data_dir, args.database_url, args.kind)
        return

    with tempfile.TemporaryDirectory(prefix="elion-bench-export-") as scratch:
        # (label, kind, writer): the same path for every shape, only the importer differs.
        shapes = [
            (f"{args.members} members", "chatgpt",
             lambda path: write_export_zip(path, args.megabytes, members=args.members)),
            ("1 member", "chatgpt", lambda path: write_export_zip(path, args.megabytes, members=1)),
            ("Claude.ai", "claude", lambda path: claude_export_build.write_export_zip(path, args.megabytes)),
        ]
        rows = {}
        for label, kind, write in shapes:
            path = Path(scratch) / f"export-{kind}-{len(rows)}.zip"
            written = write(path)
            result = run_one(path, args.database_url, kind)
            assert result["state"] == "done" and result["conversations"] == written["conversations"], result
            rows[label] = {**written, **result}
            path.unlink()

    database = "PostgreSQL" if args.database_url else "SQLite"
    print(f"Background imports, {args.megabytes:g} MB of conversation JSON each, {database}; "
          "run through archive.tasks.run_import_job in a child process per shape")
    header = (f"{'shape':>12} {'JSON MB':>8} {'zip MB':>7} {'convs':>7} {'slices':>6} {'seconds':>8} "
              f"{'MB/s':>6} {'conv/s':>7} {'CPU s':>7} {'MB/CPU s':>8} {'peak RSS above idle':>20} {'save s':>7}")
    print(header)
    figures = {}
    for label, row in rows.items():
        mb_per_s = row["json_bytes"] / 1024**2 / row["seconds"]
        conv_per_s = row["conversations"] / row["seconds"]
        figures[label] = (mb_per_s, conv_per_s, row["peak_above_idle_mb"], row["json_bytes"] / row["cpu_seconds"])
        print(f"{label:>12} {row['json_bytes'] / 1024**2:8.1f} {row['zip_bytes'] / 1024**2:7.1f} "
              f"{row['conversations']:7d} {row['slices']:6d} {row['seconds']:8.1f} {mb_per_s:6.2f} "
              f"{conv_per_s:7.1f} {row['cpu_seconds']:7.1f} {row['json_bytes'] / 1024**2 / row['cpu_seconds']:8.2f} "
              f"{row['peak_above_idle_mb']:17.1f} MB {row['save_seconds']:7.2f}")
    split, single, claude = figures[f"{args.members} members"], figures["1 member"], figures["Claude.ai"]
    print(f"{'ratio':>12} (split / one member): throughput {split[0] / single[0]:.2f}x wall, "
          f"{split[3] / single[3]:.2f}x per CPU second; peak memory {split[2] / max(single[2], 0.1):.2f}x")
    print(f"{'ratio':>12} (Claude.ai / ChatGPT one member): throughput {claude[0] / single[0]:.2f}x wall, "
          f"{claude[3] / single[3]:.2f}x per CPU second; peak memory {claude[2] / max(single[2], 0.1):.2f}x")


if __name__ == "__main__":
    main()
