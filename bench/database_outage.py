"""The database stopping mid-reply and coming back: how long until the stream ends, and until a send works.

Side by side in one run, each against a PostgreSQL server of its own (scripts/pg_tmp.sh up/down) and the
scripted provider: *today* runs a checkout of main as it was before issue 36 (`--baseline DIR`, e.g.
`git archive a5a0298 | tar -x -C DIR` with `.venv` linked), *now* this code. Per side:
1. a send streams; at its first delta the server is stopped (`pg_ctl -m fast`) and the provider goes on;
   printed: seconds from the stop until the stream's `done` (or "none" when the client's 60 s read
   timeout ends it), its last events, and what /api/health/ answers during the outage;
2. after `--outage` seconds the server starts again; printed: seconds from the start until a send in a
   new conversation has streamed to `done` (a send answered 5xx is tried again after 1 s), how many
   tries, and the status that reply and the cut-off one are stored with.

    .venv/bin/python -m bench.database_outage --baseline /tmp/elion-main
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.servers import app_env, start_daphne, start_provider, stop_process  # noqa: E402
from tests.support.postgres_server import OwnPostgres  # noqa: E402

READ_TIMEOUT = 60


def _control(provider_url: str, path: str, payload: object) -> None:
    import httpx

    httpx.post(f"{provider_url.removesuffix('/v1')}/_control/{path}", json=payload, timeout=30).raise_for_status()


def _stream(client, conversation: str, on_first_delta=None) -> tuple[int, list[str], str | None]:
    """(status, event names, done status) of one send."""
    import httpx

    names, done, fired = [], None, False
    try:
        with client.stream("POST", f"/api/conversations/{conversation}/messages/", json={"content": "go"}) as r:
            if r.status_code != 200:
                return r.status_code, [], None
            for line in r.iter_lines():
                if line.startswith("event: "):
                    names.append(line[7:])
                    if names[-1] == "delta" and not fired and on_first_delta:
                        fired = True
                        on_first_delta()
                elif line.startswith("data: ") and names and names[-1] == "done":
                    done = json.loads(line[6:])["status"]
    except httpx.ReadTimeout:
        names.append("(read timeout)")
    return 200, names, done


def run_side(name: str, root: Path, args, tmp: Path) -> dict:
    import httpx

    pg = OwnPostgres(Path(tempfile.mkdtemp(prefix=f"elion-outage-{name}.", dir="/tmp"))).up()
    provider = daphne = None
    try:
        provider, provider_url = start_provider(tmp)
        (tmp / f"data-{name}").mkdir()
        env = app_env(tmp / f"data-{name}", pg.database_url, provider_url)
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=root, env=env, check=True)
        daphne, base = start_daphne(tmp, env, False, f"daphne-{name}.log", root)
        _control(provider_url, "script", [{"chunks": ["Kept. ", "lost ", "words"], "hold": "gate"}])
        out: dict = {}
        with httpx.Client(base_url=base, timeout=READ_TIMEOUT) as client:
            cut = client.post("/api/conversations/", json={}).json()["id"]
            stopped = {}

            def stop() -> None:
                pg.down()
                stopped["at"] = time.perf_counter()
                _control(provider_url, "release", {"name": "gate"})

            _status, names, _done = _stream(client, cut, stop)
            ended = time.perf_counter()
            out["stream_end"] = f"{ended - stopped['at']:.1f} s" if "done" in names else "none"
            out["last_events"] = ",".join(names[-2:])
            health = client.get("/api/health/")
            out["health"] = f"{health.status_code} {health.headers.get('content-type', '')}"
            time.sleep(max(0.0, args.outage - (time.perf_counter() - stopped["at"])))
            pg.up()
            restarted = time.perf_counter()
            tries, done = 0, None
            while time.perf_counter() - restarted < 120:
                tries += 1
                _control(provider_url, "script", [{"text": "Back again."}])
                created = client.post("/api/conversations/", json={})
                if created.status_code == 201:
                    status, _names, done = _stream(client, created.json()["id"])
                    if status == 200:
                        break
                time.sleep(1)
            out["first_send"] = f"{time.perf_counter() - restarted:.1f} s"
            out["tries"] = tries
            out["first_send_done"] = done
            time.sleep(2)
            listed = client.get(f"/api/conversations/{cut}/messages/").json()["results"]
            out["cut_reply_stored"] = [m["status"] for m in listed if m["role"] == "assistant"]
        return out
    finally:
        stop_process(daphne)
        stop_process(provider)
        pg.destroy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout of main before issue 36")
    parser.add_argument("--outage", type=float, default=30.0, help="seconds the database stays down")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="elion-outage-bench-"))
    try:
        print(f"outage {args.outage:.0f} s; client read timeout {READ_TIMEOUT} s")
        for name, root in (("today", args.baseline), ("now", ROOT)):
            row = run_side(name, root, args, tmp)
            print(f"{name:>6}: stream ended {row['stream_end']} after the stop (last events {row['last_events']}); "
                  f"health during the outage {row['health']}; first send after the restart done in "
                  f"{row['first_send']} ({row['tries']} tries, {row['first_send_done']}); cut-off reply stored "
                  f"{row['cut_reply_stored']}", flush=True)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
