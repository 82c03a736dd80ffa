"""A background import end to end, as the owner does it: Daphne, a django-q2 worker, the upload in pieces, HTTP.

For each shape (a generated ChatGPT export zip split into --members members, the
same conversations as one member, a generated Claude.ai export zip of the same
JSON size; bench/chatgpt_export_build.py, bench/claude_export_build.py) it
starts, on loopback and on a fresh data dir and database (SQLite, or a fresh
database on --database-url / DATABASE_URL), a Daphne (`elion.asgi:application`)
and a worker (`manage.py qcluster`, the ORM broker). Then over HTTP, as
static/js/archive/import_job.js does it:

  1. `POST /api/archive/uploads/ {name, size}`, then the file in pieces of
     ELION_UPLOAD_PIECE_BYTES (8 MiB), `PUT /api/archive/uploads/{id}/?offset=N`;
  2. `POST /api/archive/import/{chatgpt|claude}/?background=true {"upload_ids", "collection", "assistant_name"}`,
     202 `{"job_id"}`;
  3. `GET /api/archive/imports/{job_id}/` every 50 ms while the job is queued
     (the wait for the ORM broker's poll, reported on its own), then every
     700 ms as the page does, until it ends; `done` must never go back and must
     end at `total`;
  4. the documents checked through the API: the job's `conversations` and
     `document_ids` are the export's conversations, the document list holds
     them, and the first and last document answer.

Meanwhile a thread samples every 100 ms, from /proc, the resident memory
(VmRSS) of Daphne and of every process of the worker's tree (the cluster
forks a sentinel, a pusher, a monitor and the workers), and at the end each
one's VmHWM (reset with clear_refs once idle). Idle is taken after both have
started and Daphne has answered a first request. Printed per shape: MB,
conversations, upload and import seconds, MB/s and conversations/s, the
queue wait, Daphne's peak above its idle, the worker tree's (the sum of its
processes' VmRSS: forked workers share pages, so the sum over-counts) and its
largest process's peak above its own idle, and the ratios between shapes.

    .venv/bin/python -m bench.import_http --megabytes 500          # the issue's case, SQLite
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.import_http --megabytes 100; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                        # PostgreSQL

A benchmark, not a test: it fails only when the app misbehaves (a non-2xx,
a job that does not end done, progress that goes back, documents missing).
Everything it starts is stopped and its temp dirs (and fresh database) removed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench import claude_export_build
from bench.chatgpt_export_build import write_export_zip
from bench.servers import BenchError, app_env, pg_create_database, pg_drop_database, start_daphne, stop_process

ROOT = Path(__file__).resolve().parents[1]
NO_PROVIDER = "http://127.0.0.1:9/v1"  # an import calls no model
PAGE_POLL_SECONDS = 0.7  # POLL_MS in static/js/archive/import_job.js
QUEUED_POLL_SECONDS = 0.05
SAMPLE_SECONDS = 0.1
MIB = 1024**2


# --- /proc ------------------------------------------------------------------------


def status_kib(pid: int, field_name: str) -> int | None:
    """A `VmRSS`/`VmHWM` line of /proc/PID/status in KiB; None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    for line in text.splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return None


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants (from /proc/PID/task/TID/children)."""
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    pending.extend(int(child) for child in (task / "children").read_text().split())
    return found


def peak_reset(pid: int) -> None:
    """VmHWM back to the current VmRSS (clear_refs 5), so the peak read later is from now on."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError, PermissionError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


@dataclass
class Watched:
    """One watched process tree: its idle and peak resident memory, per process and summed."""

    root: int
    idle: dict[int, int] = field(default_factory=dict)  # pid -> VmRSS KiB when idle
    peak: dict[int, int] = field(default_factory=dict)  # pid -> highest VmRSS KiB sampled
    hwm: dict[int, int] = field(default_factory=dict)  # pid -> VmHWM KiB, last read
    peak_sum: int = 0

    def sample(self) -> dict[int, int]:
        now = {}
        for pid in process_tree(self.root):
            rss = status_kib(pid, "VmRSS")
            if rss is None:
                continue
            now[pid] = rss
            self.peak[pid] = max(self.peak.get(pid, 0), rss)
            hwm = status_kib(pid, "VmHWM")
            if hwm is not None:
                self.hwm[pid] = hwm
        self.peak_sum = max(self.peak_sum, sum(now.values()))
        return now

    def set_idle(self) -> None:
        self.idle = self.sample()
        for pid in self.idle:
            peak_reset(pid)
        self.peak, self.hwm, self.peak_sum = dict(self.idle), dict(self.idle), sum(self.idle.values())

    def figures(self) -> dict:
        idle_sum = sum(self.idle.values())
        # A process born after idle (a worker recycled) counts from nothing.
        above = {pid: max(self.peak[pid], self.hwm.get(pid, 0)) - self.idle.get(pid, 0) for pid in self.peak}
        largest = max(above, key=above.get)
        return {
            "processes": len(self.peak),
            "idle_mb": idle_sum / 1024,
            "peak_sum_above_idle_mb": (self.peak_sum - idle_sum) / 1024,
            "largest_above_idle_mb": above[largest] / 1024,
            "largest_idle_mb": self.idle.get(largest, 0) / 1024,
            "hwm_above_idle_mb": max(self.hwm.get(pid, 0) - self.idle.get(pid, 0) for pid in self.peak) / 1024,
        }


class Sampler(threading.Thread):
    """Samples the watched trees every SAMPLE_SECONDS until stopped."""

    def __init__(self, watched: list[Watched]) -> None:
        super().__init__(daemon=True)
        self.watched, self.stopped, self.samples = watched, threading.Event(), 0

    def run(self) -> None:
        while not self.stopped.wait(SAMPLE_SECONDS):
            for one in self.watched:
                one.sample()
            self.samples += 1

    def stop(self) -> None:
        self.stopped.set()
        self.join(timeout=5)
        for one in self.watched:
            one.sample()


# --- the servers --------------------------------------------------------------------


def migrate(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)


def start_worker(tmp: Path, env: dict[str, str]) -> subprocess.Popen:
    """`manage.py qcluster` in its own session (so its tree can be stopped whole), once its tree is settled."""
    log = tmp / "qcluster.log"
    process = subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=env, start_new_session=True,
        stdout=open(log, "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115 - lives as long as the process
    )
    deadline, sizes = time.monotonic() + 90, []
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"qcluster exited early:\n{log.read_text()[-3000:]}")
        sizes.append(len(process_tree(process.pid)))
        # The main process, the sentinel, the pusher, the monitor and at least one worker, unchanged for 2 s.
        if len(sizes) >= 20 and sizes[-1] >= 5 and len(set(sizes[-20:])) == 1:
            return process
        time.sleep(0.1)
    raise BenchError(f"qcluster did not settle:\n{log.read_text()[-3000:]}")


def stop_worker(process: subprocess.Popen | None) -> None:
    if process is None:
        return
    stop_process(process)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # any worker the cluster left behind (its own session)


# --- the import over HTTP ---------------------------------------------------------


def ok(response: httpx.Response, *expected: int) -> dict:
    if response.status_code not in (expected or (200,)):
        raise BenchError(f"{response.request.method} {response.request.url} answered {response.status_code}: "
                         f"{response.text[:500]}")
    return response.json() if response.content else {}


def upload_in_pieces(client: httpx.Client, path: Path, piece_bytes: int) -> tuple[str, int]:
    """The file sent as import_job.js sends it; (its upload id, the pieces sent)."""
    size = path.stat().st_size
    upload = ok(client.post("/api/archive/uploads/", json={"name": path.name, "size": size}), 201, 200)
    url, received, pieces = f"/api/archive/uploads/{upload['upload_id']}/", 0, 0
    with path.open("rb") as stream:
        while received < size:
            stream.seek(received)
            piece = stream.read(piece_bytes)
            state = ok(client.put(f"{url}?offset={received}", content=piece,
                                  headers={"Content-Type": "application/octet-stream"}))
            received, pieces = state["received"], pieces + 1
    return upload["upload_id"], pieces


def follow(client: httpx.Client, job_id: str, timeout: float) -> dict:
    """Poll the job until it ends: its last answer, the queue wait, and the progress seen."""
    url, started = f"/api/archive/imports/{job_id}/", time.perf_counter()
    queued_until, seen, last_done, polls = None, [], 0, 0
    while True:
        job = ok(client.get(url))
        polls += 1
        now = time.perf_counter()
        if job["done"] < last_done:
            raise BenchError(f"done went back from {last_done} to {job['done']}")
        last_done = job["done"]
        if job["state"] != "queued" and queued_until is None:
            queued_until = now
        if job["state"] == "running" and job["total"] is not None and (not seen or seen[-1] != job["done"]):
            seen.append(job["done"])
        if job["state"] not in ("queued", "running"):
            return {"job": job, "queue_wait": (queued_until or now) - started, "progress_values": len(seen),
                    "polls": polls, "seconds": now - started}
        if now - started > timeout:
            raise BenchError(f"the job did not end in {timeout:.0f} s: {json.dumps(job)[:500]}")
        time.sleep(QUEUED_POLL_SECONDS if job["state"] == "queued" else PAGE_POLL_SECONDS)


def documents_check(client: httpx.Client, job: dict, conversations: int) -> None:
    if job["conversations"] != conversations or len(job["document_ids"]) != conversations:
        raise BenchError(f"expected {conversations} documents; the job says {job['conversations']}, "
                         f"{len(job['document_ids'])} ids")
    listed = ok(client.get("/api/archive/documents/", params={"collection": "conversations"}))["results"]
    if len(listed) != min(conversations, 1000):  # the list answers at most 1,000
        raise BenchError(f"the document list holds {len(listed)} of {conversations}")
    for document_id in (job["document_ids"][0], job["document_ids"][-1]):
        ok(client.get(f"/api/archive/documents/{document_id}/"))


def slices(env: dict[str, str], job_id: str) -> int:
    """The django-q2 tasks that ran the job (one per slice), from the task table."""
    code = ("from django_q.models import Task; "
            f"print(Task.objects.filter(name__endswith={job_id!r}).count())")
    out = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def run_shape(path: Path, kind: str, written: dict, database_url: str | None, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="elion-bench-import-http-") as tmp_name:
        tmp = Path(tmp_name)
        url, drop = (pg_create_database(database_url) if database_url else (None, None))
        daphne = worker = sampler = None
        try:
            env = app_env(tmp / "data", url, NO_PROVIDER)
            migrate(env)
            piece_bytes = int(env.get("ELION_UPLOAD_PIECE_BYTES") or 8 * MIB)
            daphne, base = start_daphne(tmp, env, instrumented=False)
            worker = start_worker(tmp, env)
            with httpx.Client(base_url=base, timeout=600) as client:
                ok(client.get("/api/archive/documents/"))  # Daphne has answered once: Django is loaded
                time.sleep(1.0)
                watched = [Watched(daphne.pid), Watched(worker.pid)]
                for one in watched:
                    one.set_idle()
                sampler = Sampler(watched)
                sampler.start()
                started = time.perf_counter()
                upload_id, pieces = upload_in_pieces(client, path, piece_bytes)
                uploaded = time.perf_counter()
                # Daphne's peak so far: the upload's share of it (the polls that follow add theirs).
                upload_peak = (status_kib(daphne.pid, "VmHWM") or 0) - watched[0].idle.get(daphne.pid, 0)
                answer = ok(client.post(f"/api/archive/import/{kind}/?background=true", json={
                    "upload_ids": [upload_id], "collection": "conversations", "assistant_name": "",
                }), 202)
                asked = time.perf_counter()
                followed = follow(client, answer["job_id"], timeout)
                job_end_peak = (status_kib(daphne.pid, "VmHWM") or 0) - watched[0].idle.get(daphne.pid, 0)
                sampler.stop()
                job = followed["job"]
                if followed["seconds"] > 10 * PAGE_POLL_SECONDS and followed["progress_values"] < 2:
                    raise BenchError(f"the progress bar did not move in {followed['seconds']:.0f} s "
                                     f"({followed['polls']} polls)")
                if job["state"] != "done" or job["done"] != job["total"]:
                    raise BenchError(f"the job ended {job['state']} at {job['done']} of {job['total']}: "
                                     f"{json.dumps(job)[:800]}")
                documents_check(client, job, written["conversations"])
            daphne_figures, worker_figures = (one.figures() for one in watched)
            return {
                **written, "pieces": pieces, "upload_seconds": uploaded - started, "start_seconds": asked - uploaded,
                "import_seconds": followed["seconds"], "queue_wait": followed["queue_wait"],
                "progress_values": followed["progress_values"], "polls": followed["polls"], "total": job["total"],
                "slices": slices(env, answer["job_id"]), "samples": sampler.samples,
                "daphne": {**daphne_figures, "upload_above_idle_mb": upload_peak / 1024,
                           "job_end_above_idle_mb": job_end_peak / 1024}, "worker": worker_figures,
            }
        finally:
            if sampler is not None:
                sampler.stopped.set()
            stop_worker(worker)
            stop_process(daphne)
            if drop:
                pg_drop_database(database_url, drop)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=500.0, help="conversation JSON to generate per shape (MB)")
    parser.add_argument("--members", type=int, default=4, help="split members of the first shape")
    parser.add_argument("--shapes", default="split,one,claude",
                        help="which shapes, comma-separated: split, one, claude (default: all three)")
    parser.add_argument("--megabytes-per-shape", default="",
                        help="override per shape, e.g. one=200,claude=200 (others use --megabytes)")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL"),
                        help="PostgreSQL server (a fresh database per shape, dropped after); default DATABASE_URL")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds a job may take")
    args = parser.parse_args()
    sizes = {key: float(value) for key, value in
             (item.split("=") for item in args.megabytes_per_shape.split(",") if item)}
    shapes = {
        "split": (f"ChatGPT, {args.members} members", "chatgpt",
                  lambda path, mb: write_export_zip(path, mb, members=args.members)),
        "one": ("ChatGPT, 1 member", "chatgpt", lambda path, mb: write_export_zip(path, mb, members=1)),
        "claude": ("Claude.ai", "claude", claude_export_build.write_export_zip),
    }
    chosen = [name for name in args.shapes.split(",") if name]
    unknown = set(chosen) - set(shapes)
    if unknown:
        parser.error(f"unknown shapes: {', '.join(sorted(unknown))}")

    rows = {}
    with tempfile.TemporaryDirectory(prefix="elion-bench-export-") as scratch:
        for name in chosen:
            label, kind, write = shapes[name]
            path = Path(scratch) / f"export-{name}.zip"
            megabytes = sizes.get(name, args.megabytes)
            generated = time.perf_counter()
            written = write(path, megabytes)
            print(f"# {label}: generated {written['json_bytes'] / MIB:.1f} MB of JSON, "
                  f"{written['conversations']} conversations, in {time.perf_counter() - generated:.0f} s; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
            rows[label] = run_shape(path, kind, written, args.database_url, args.timeout)
            print(f"# {label}: done, load {os.getloadavg()[0]:.2f}; {json.dumps(rows[label])}", flush=True)
            path.unlink()
    report(rows, "PostgreSQL" if args.database_url else "SQLite")


def report(rows: dict[str, dict], database: str) -> None:
    print(f"Background imports end to end over HTTP (Daphne + manage.py qcluster, ORM broker), {database}; "
          f"uploaded in pieces, followed at GET /api/archive/imports/{{id}}/")
    print(f"{'shape':>18} {'JSON MB':>8} {'zip MB':>7} {'convs':>6} {'upload s':>8} {'import s':>8} {'MB/s':>6} "
          f"{'conv/s':>7} {'queue s':>7} {'slices':>6} {'Daphne +MB':>10} {'worker tree +MB':>15} "
          f"{'largest proc +MB':>16} {'bar steps':>9}")
    figures = {}
    for label, row in rows.items():
        mb = row["json_bytes"] / MIB
        mb_per_s, conv_per_s = mb / row["import_seconds"], row["conversations"] / row["import_seconds"]
        figures[label] = (mb_per_s, conv_per_s, row["daphne"]["hwm_above_idle_mb"],
                          row["worker"]["peak_sum_above_idle_mb"], row["worker"]["largest_above_idle_mb"])
        print(f"{label:>18} {mb:8.1f} {row['zip_bytes'] / MIB:7.1f} {row['conversations']:6d} "
              f"{row['upload_seconds']:8.1f} {row['import_seconds']:8.1f} {mb_per_s:6.2f} {conv_per_s:7.1f} "
              f"{row['queue_wait']:7.2f} {row['slices']:6d} {row['daphne']['hwm_above_idle_mb']:10.1f} "
              f"{row['worker']['peak_sum_above_idle_mb']:15.1f} {row['worker']['largest_above_idle_mb']:16.1f} "
              f"{row['progress_values']:9d}")
    for label, row in rows.items():
        print(f"{label:>18}: idle Daphne {row['daphne']['idle_mb']:.1f} MB (its peak by the upload's end "
              f"{row['daphne']['upload_above_idle_mb']:.1f} MB above, by the job's end "
              f"{row['daphne']['job_end_above_idle_mb']:.1f} MB), worker tree {row['worker']['idle_mb']:.1f} "
              f"MB in {row['worker']['processes']} processes (largest: idle {row['worker']['largest_idle_mb']:.1f} MB, "
              f"VmHWM {row['worker']['hwm_above_idle_mb']:.1f} MB above); upload {row['pieces']} pieces, "
              f"{row['zip_bytes'] / MIB / row['upload_seconds']:.1f} MB/s; start answered in "
              f"{row['start_seconds']:.2f} s; {row['polls']} polls, {row['samples']} memory samples")
    # Each shape beside ChatGPT's one member (the plainest shape), when it was run.
    base = "ChatGPT, 1 member" if "ChatGPT, 1 member" in figures else next(iter(figures))
    for label in figures:
        if label == base:
            continue
        a, b = figures[label], figures[base]
        print(f"ratio {label} / {base}: MB/s {a[0] / b[0]:.2f}x, conversations/s {a[1] / b[1]:.2f}x, "
              f"Daphne peak {a[2] / max(b[2], 0.1):.2f}x, worker tree peak {a[3] / max(b[3], 0.1):.2f}x, "
              f"largest process {a[4] / max(b[4], 0.1):.2f}x")

if __name__ == "__main__":
    main()
