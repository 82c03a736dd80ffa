"""`make run` as the owner lives with it: time to the first page on a cold start (venv present, empty
data dir) and a warm restart, time to stop after SIGTERM and what is left running, and the static
files it serves. Two commits side by side, alternating, in one run (issue 41, items 4 and 5).

    .venv/bin/python bench/run_lifecycle.py [--before REF] [--after REF] [--rounds N]

Each commit is cloned into a throwaway directory with this checkout's venv linked in (no install:
`make -o .venv/.installed-app`), served on SQLite in its own data directory. A stop waits at most
40 s, then kills what is left (counted as left behind).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STOP_WAIT = 40.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def session_processes(sid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-s", str(sid)], capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip() and " Z" not in f" {line.split()[1]}"]


def clone(ref: str, work: Path) -> Path:
    target = work / ref.replace("/", "_")
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "-q", ref], check=True)
    (target / ".venv").symlink_to(Path(os.path.realpath(ROOT / ".venv")))
    return target


def page_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except Exception:  # noqa: BLE001 - not up yet
        return False


def serve_and_stop(tree: Path, data: Path) -> dict:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ELION_", "DATABASE_URL"))}
    env.update(ELION_DATA_DIR=str(data), PORT=str(port))
    log = open(data.parent / f"{data.name}-{port}.log", "wb")  # noqa: SIM115 - closed below
    started = time.monotonic()
    process = subprocess.Popen(["make", "-o", ".venv/.installed-app", "run"], cwd=tree, env=env,
                               start_new_session=True, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    while not page_answers(f"http://127.0.0.1:{port}/login/"):
        if process.poll() is not None:
            raise SystemExit(f"make run exited in {tree}: see {log.name}")
        time.sleep(0.2)
    first_page = time.monotonic() - started
    time.sleep(3)  # the queue cluster's workers are up
    stop_at = time.monotonic()
    os.killpg(process.pid, signal.SIGTERM)
    left = session_processes(process.pid)
    while left and time.monotonic() - stop_at < STOP_WAIT:
        time.sleep(0.1)
        process.poll()
        left = session_processes(process.pid)
    stopped = time.monotonic() - stop_at
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    process.wait()
    log.close()
    return {"first_page": first_page, "stop": stopped, "left": len(left)}


def static_set(data: Path) -> tuple[int, int]:
    files = [p for p in (data / "staticfiles").rglob("*") if p.is_file() and not p.name.startswith(".")]
    return len(files), sum(p.stat().st_size for p in files)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="main")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    refs = {"before": subprocess.run(["git", "rev-parse", "--short", args.before], capture_output=True, text=True,
                                     cwd=ROOT, check=True).stdout.strip(),
            "after": subprocess.run(["git", "rev-parse", "--short", args.after], capture_output=True, text=True,
                                    cwd=ROOT, check=True).stdout.strip()}
    work = Path(tempfile.mkdtemp(prefix="elion-run-lifecycle."))
    trees = {side: clone(ref, work) for side, ref in refs.items()}
    rows: dict[str, list[dict]] = {"before": [], "after": []}
    for round_number in range(args.rounds):
        for side in ("before", "after"):
            data = work / f"data-{side}-{round_number}"
            data.mkdir()
            cold = serve_and_stop(trees[side], data)
            warm = serve_and_stop(trees[side], data)
            count, size = static_set(data)
            rows[side].append({"cold": cold, "warm": warm, "files": count, "bytes": size})
            print(f"round {round_number + 1} {side} ({refs[side]}): cold {cold['first_page']:.1f} s, "
                  f"warm {warm['first_page']:.1f} s, stop {cold['stop']:.1f}/{warm['stop']:.1f} s, "
                  f"left {cold['left']}/{warm['left']}, static {count} files {size / 1e6:.1f} MB", flush=True)
    print()
    print("| | before (" + refs["before"] + ") | after (" + refs["after"] + ") | after / before |")
    print("|---|---|---|---|")

    def median(side: str, pick) -> float:
        return statistics.median(pick(row) for row in rows[side])

    for label, pick, unit in [
        ("first page, cold (venv present, empty data dir)", lambda r: r["cold"]["first_page"], "s"),
        ("first page, warm restart", lambda r: r["warm"]["first_page"], "s"),
        ("stop after SIGTERM (cold run)", lambda r: r["cold"]["stop"], "s"),
        ("stop after SIGTERM (warm run)", lambda r: r["warm"]["stop"], "s"),
        ("processes left after the stop", lambda r: r["cold"]["left"] + r["warm"]["left"], ""),
        ("served static files (STATIC_ROOT)", lambda r: r["files"], ""),
        ("served static size, MB", lambda r: r["bytes"] / 1e6, ""),
    ]:
        before, after = median("before", pick), median("after", pick)
        ratio = f"{after / before:.2f}×" if before else "-"
        print(f"| {label} | {before:.1f} {unit} | {after:.1f} {unit} | {ratio} |")
    print(f"\n(load average at the end: {os.getloadavg()[0]:.1f}; work dir {work})")


if __name__ == "__main__":
    main()
