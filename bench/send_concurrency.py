"""Many conversations sending at once through one Daphne on PostgreSQL, against a provider that streams slowly.

For each count of conversations (`--conversations 50,100`), side by side in one run on a fresh database:
  held      `bench.held_connection_asgi`: the request keeps its pooled connection while the reply streams
            (main before issue 36);
  released  `elion.asgi`: the connection goes back to the pool when the stream starts; the reply's writes
            check one out each;
  main      (`--baseline DIR`, a checkout of main before issue 36, e.g. `git archive a5a0298 | tar -x -C DIR`
            with `.venv` linked) that code as it was: held connections, a 20 s pool timeout, 500s;
  scaled    (`--scaled`) `elion.asgi` as `make run-scaled` serves it: nginx (the config
            `scripts/run_scaled.sh nginx-conf` writes) round robin over two Daphne workers, the channel layer
            on a Redis started here on a free loopback port; each worker has its own pool of `--pool`, so
            the peaks are bounded by 2 × pool.
Each side is a fresh Daphne with `--pool` connections (ELION_DB_POOL_MAX; the default pool timeout,
10 s), N fresh conversations, N sends at once over HTTP (SSE), each reply streamed by the scripted provider for about
`--stream-seconds`. Printed per side: the answers (200 / 503 / other 5xx / hung past the client's 180 s),
replies that ended `done: complete`, the peak of the app's connections open and of those busy at once
(pg_stat_activity, sampled every 50 ms; "busy" = not `idle`), and the wall time.

    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.send_concurrency [--baseline DIR] [--scaled]; \
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"

A benchmark, not a test: it asserts nothing; it needs DATABASE_URL (a PostgreSQL server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.scaled_servers import free_port_run, spawn_daphne, spawn_nginx  # noqa: E402 - after the path fix above
from bench.servers import (  # noqa: E402 - after the path fix above
    app_env,
    free_port,
    pg_create_database,
    pg_drop_database,
    start_provider,
    stop_process,
    wait_for_port,
)

SIDES = {"held": "bench.held_connection_asgi:application", "released": "elion.asgi:application"}
APP_NAME = "elion-send-concurrency"
CLIENT_TIMEOUT = 180
SCALED_WORKERS = 2


def _control(provider_url: str, path: str, payload: object) -> None:
    import httpx

    httpx.post(f"{provider_url.removesuffix('/v1')}/_control/{path}", json=payload, timeout=30).raise_for_status()


class ConnectionWatch:
    """Peak of the app's connections (open, and busy: not idle) while it runs."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self.open = self.busy = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.database_url, autocommit=True) as conn:
            while not self._stop.is_set():
                opened, busy = conn.execute(
                    "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') FROM pg_stat_activity "
                    "WHERE application_name = %s AND pid <> pg_backend_pid()", [APP_NAME]).fetchone()
                self.open, self.busy = max(self.open, opened), max(self.busy, busy)
                self._stop.wait(0.05)

    def __enter__(self) -> ConnectionWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def _send(client, base: str, conversation: str) -> str:
    import httpx

    try:
        async with client.stream("POST", f"{base}/api/conversations/{conversation}/messages/",
                                 json={"content": "tell me slowly"}) as response:
            if response.status_code != 200:
                await response.aread()
                return str(response.status_code)
            name, status = None, None
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name == "done":
                    status = json.loads(line[6:])["status"]
            return "200 complete" if status == "complete" else f"200 {status}"
    except httpx.TimeoutException:
        return "hung"
    except httpx.TransportError as exc:
        return f"connection: {type(exc).__name__}"


async def _run_sends(base: str, conversations: list[str]) -> list[str]:
    import httpx

    limits = httpx.Limits(max_connections=len(conversations) + 10)
    async with httpx.AsyncClient(timeout=CLIENT_TIMEOUT, limits=limits) as client:
        return await asyncio.gather(*(_send(client, base, c) for c in conversations))


def start_redis(tmp: Path) -> tuple[subprocess.Popen, str]:
    """A throwaway redis-server on a free loopback port (no persistence), as scripts/run_scaled.sh starts one."""
    if not shutil.which("redis-server"):
        raise SystemExit("--scaled needs redis-server (apt-get install redis-server, or `make run-scaled` once)")
    port, log = free_port(), tmp / "redis.log"
    (tmp / "redis").mkdir()
    process = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--dir", str(tmp / "redis"),
         "--save", "", "--appendonly", "no", "--daemonize", "no"],
        stdout=open(log, "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
    wait_for_port(port, process, log)
    return process, f"redis://127.0.0.1:{port}/0"


def start_app(side: str, count: int, args, tmp: Path, env: dict) -> tuple[list[subprocess.Popen], str]:
    """The side's servers, started and answering: one Daphne, or (scaled) nginx -> two Daphne workers."""
    if side == "scaled":
        base = free_port_run(SCALED_WORKERS)
        processes = [spawn_daphne(tmp, env, base + i, f"daphne-scaled-{count}-{i}")
                     for i in range(1, SCALED_WORKERS + 1)]
        processes.append(spawn_nginx(tmp, env, base, SCALED_WORKERS))
        logs = [*(tmp / f"daphne-scaled-{count}-{i}.log" for i in range(1, SCALED_WORKERS + 1)), tmp / "nginx.log"]
        for port, process, log in zip([*(base + i for i in range(1, SCALED_WORKERS + 1)), base], processes, logs,
                                      strict=True):
            wait_for_port(port, process, log)
        return processes, f"http://127.0.0.1:{base}"
    port = free_port()
    log = tmp / f"daphne-{side}-{count}.log"
    root, app = (args.baseline, "elion.asgi:application") if side == "main" else (ROOT, SIDES[side])
    process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), app],
                               cwd=root, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
    try:
        wait_for_port(port, process, log)
    except BaseException:
        stop_process(process)
        raise
    return [process], f"http://127.0.0.1:{port}"


def run_side(side: str, count: int, args, tmp: Path, env: dict, provider_url: str) -> dict:
    import httpx

    processes: list[subprocess.Popen] = []
    try:
        processes, base = start_app(side, count, args, tmp, env)
        with httpx.Client(base_url=base, timeout=30) as client:
            conversations = [client.post("/api/conversations/", json={}).json()["id"] for _ in range(count)]
        chunks = max(1, round(args.stream_seconds / 0.5))
        _control(provider_url, "script", [{"chunks": [f" w{i}" for i in range(chunks)],
                                           "delay_between_chunks": 0.5}] * count)
        with ConnectionWatch(env["DATABASE_URL"]) as watch:
            started = time.perf_counter()
            answers = asyncio.run(_run_sends(base, conversations))
            wall = time.perf_counter() - started
    finally:
        for process in reversed(processes):
            stop_process(process)
    tally: dict[str, int] = {}
    for answer in answers:
        tally[answer] = tally.get(answer, 0) + 1
    return {"answers": tally, "open": watch.open, "busy": watch.busy, "wall": wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", default="50,100")
    parser.add_argument("--stream-seconds", type=float, default=10.0)
    parser.add_argument("--pool", type=int, default=20)
    parser.add_argument("--baseline", type=Path, help="also run this checkout of main before issue 36")
    parser.add_argument("--scaled", action="store_true",
                        help="also run nginx -> two Daphne workers (Redis channel layer), as `make run-scaled`")
    args = parser.parse_args(argv)
    server_url = os.environ.get("DATABASE_URL")
    if not server_url:
        parser.error("set DATABASE_URL to a PostgreSQL server (scripts/pg_tmp.sh start)")
    tmp = Path(tempfile.mkdtemp(prefix="elion-send-concurrency-"))
    provider = redis = None
    database_url, created = pg_create_database(server_url)
    try:
        provider, provider_url = start_provider(tmp)
        (tmp / "data").mkdir()
        env = app_env(tmp / "data", f"{database_url}?application_name={APP_NAME}", provider_url)
        env.update(ELION_DB_POOL_MAX=str(args.pool))
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        scaled_env = None
        if args.scaled:
            redis, redis_url = start_redis(tmp)
            scaled_env = {**env, "REDIS_URL": redis_url}
        print(f"pool {args.pool}, pool timeout 10 s (the default), replies streamed for ~{args.stream_seconds:.0f} s, "
              f"client timeout {CLIENT_TIMEOUT} s")
        if args.scaled:
            print(f"scaled: nginx -> {SCALED_WORKERS} Daphne workers, Redis channel layer, each worker its own pool "
                  f"of {args.pool}: peak open/busy at most {SCALED_WORKERS} x {args.pool} = "
                  f"{SCALED_WORKERS * args.pool}")
        print(f"{'sends':>5} {'side':>9} {'peak open':>9} {'peak busy':>9} {'wall s':>7}  answers")
        for count in (int(n) for n in args.conversations.split(",")):
            for side in [*(["main"] if args.baseline else []), *SIDES, *(["scaled"] if args.scaled else [])]:
                row = run_side(side, count, args, tmp, scaled_env if side == "scaled" else env, provider_url)
                answers = ", ".join(f"{k}: {v}" for k, v in sorted(row["answers"].items()))
                print(f"{count:>5} {side:>9} {row['open']:>9} {row['busy']:>9} {row['wall']:>7.1f}  {answers}",
                      flush=True)
        return 0
    finally:
        stop_process(redis)
        stop_process(provider)
        if created:
            pg_drop_database(server_url, created)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
