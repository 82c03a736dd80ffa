"""What one upload of an export costs the ASGI server, sent whole or in pieces (issue 21).

Daphne holds a request's whole body in memory before the app sees it
(django/daphne#483), so an export sent as one multipart request costs the
server about its size several times over, whatever the import does with it
afterwards. The import page sends an export in pieces instead
(`archive/services/upload_pieces.py`, `ELION_UPLOAD_PIECE_BYTES`, 8 MiB). This bench
starts a fresh Daphne for each way, sends the same `--megabytes` file (a
JSON list of spaces: the background import refuses it later, which does not
matter here) and prints the Daphne process's peak resident memory above its
idle peak (VmHWM), side by side, with their ratio:

    .venv/bin/python -m bench.upload_pieces --megabytes 100

A benchmark, not a test: it asserts only that each upload was accepted (202).
Everything it starts is stopped and its temp dir removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _peak_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM"):
            return int(line.split()[1]) // 1024
    raise RuntimeError("no VmHWM")


def one_way(way: str, data: bytes, env: dict, piece: int) -> dict:
    port = _free_port()
    daphne = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "elion.asgi:application"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(200):
            try:
                httpx.get(f"{base}/api/settings/", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        idle = _peak_mb(daphne.pid)
        started = time.perf_counter()
        with httpx.Client(base_url=base, timeout=600) as client:
            if way == "whole":
                answer = client.post("/api/archive/import/chatgpt/?background=true",
                                     files={"file": ("conversations.json", data)})
            else:
                upload = client.post("/api/archive/uploads/", json={"name": "conversations.json", "size": len(data)})
                upload_id = upload.json()["upload_id"]
                for offset in range(0, len(data), piece):
                    sent = client.put(f"/api/archive/uploads/{upload_id}/?offset={offset}",
                                      content=data[offset:offset + piece],
                                      headers={"Content-Type": "application/octet-stream"})
                    if sent.status_code != 200:
                        raise SystemExit(f"piece at {offset} answered {sent.status_code}: {sent.text[:200]}")
                answer = client.post("/api/archive/import/chatgpt/?background=true", json={"upload_ids": [upload_id]})
        if answer.status_code != 202:
            raise SystemExit(f"{way}: the import answered {answer.status_code}: {answer.text[:200]}")
        return {"way": way, "seconds": time.perf_counter() - started, "peak_mb": _peak_mb(daphne.pid) - idle}
    finally:
        daphne.terminate()
        daphne.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--piece-megabytes", type=int, default=8)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="elion-upload-pieces-"))
    try:
        env = dict(os.environ, ELION_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="elion.settings")
        env.pop("DATABASE_URL", None)
        env["ELION_UPLOAD_PIECE_BYTES"] = str(args.piece_megabytes * 1024 * 1024)
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        data = b"[" + b" " * (args.megabytes * 1024 * 1024 - 2) + b"]"
        rows = [one_way(way, data, env, args.piece_megabytes * 1024 * 1024) for way in ("whole", "pieces")]
        print(f"upload_pieces — one {args.megabytes} MB export; pieces of {args.piece_megabytes} MB; SQLite")
        print(f"{'way':<8} {'seconds':>8} {'Daphne peak above idle':>24}")
        for row in rows:
            print(f"{row['way']:<8} {row['seconds']:>8.1f} {row['peak_mb']:>21,} MB")
        whole, pieces = rows
        print(f"ratio whole / pieces peak: {whole['peak_mb'] / max(pieces['peak_mb'], 1):.0f}x")
        print(json.dumps(rows))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
