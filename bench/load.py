"""How many concurrent streaming conversations does one Daphne process carry?

Measured side by side in one run, against the same scripted provider (a
subprocess, `tests.support.scripted_provider`), each side with `--clients`
concurrent clients doing `--rounds` sends one after another:

  direct   plain HTTP clients streaming `POST /v1/responses` from the provider
           itself: the floor (what the provider and the client cost);
  app      WebSocket clients, one conversation each, sending
           `{"type": "send"}` frames to one Daphne process (real app, real
           database) and reading `delta` frames until `done`;
  scaled   (`--workers 2`) the same WebSocket clients through nginx (round
           robin, no stickiness) to two Daphne processes on the same database,
           as `make run-scaled` runs them.

Every reply has `--chunks` text deltas paced `--chunk-delay` seconds apart by
the provider. A delta's latency is when it reaches the client, counted from
the send, less the provider's own pacing before it (index × chunk delay):
what is left is the time spent in the path (provider, app, database, proxy,
client). The app's added latency per delta is its percentile less the direct
percentile. Throughput is deltas (and replies) delivered per second of wall
time across all clients. "Server CPU ms/reply" is the CPU time the side's
server processes spent in the measured part, per reply (direct: the provider;
app: the Daphne process; scaled: both workers and nginx; the provider's and the
database server's share is not in the app figures): on a shared machine it is
the steadier sizing figure, since wall-clock figures move with the load.

    .venv/bin/python -m bench.load                               # SQLite, 100 clients
    .venv/bin/python -m bench.load --workers 2                   # + nginx -> 2 Daphne workers
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.load --workers 2; \\
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                     # PostgreSQL (a fresh database on it)

A benchmark, not a test: it asserts nothing about timing. It fails only when
a side misbehaves (a missing or out-of-order delta, an error frame, a reply
that does not finish `complete`). Everything it starts (provider, Daphne
processes, nginx, a fresh PostgreSQL database when DATABASE_URL is set) is
stopped and its temp dir removed, also on Ctrl-C. All traffic stays on 127.0.0.1.
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
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.scaled_servers import nginx_workers, start_servers  # noqa: E402
from bench.servers import (  # noqa: E402 - after the path fix above
    MODEL,
    BenchError,
    app_env,
    percentile,
    pg_create_database,
    pg_drop_database,
    start_provider,
    stop_process,
)

# Deadline for one whole side; a side that takes longer is a failure, not a figure.
SIDE_TIMEOUT = 600


@dataclass
class Side:
    name: str
    ttfd: list[float] = field(default_factory=list)  # send -> first delta
    lags: list[float] = field(default_factory=list)  # per delta: arrival - send - provider pacing
    deltas: int = 0
    replies: int = 0
    wall: float = 0.0
    server_pids: list[int] = field(default_factory=list)  # whose CPU time the side is charged
    server_cpu: float = 0.0  # their CPU seconds during the measured part

    @property
    def deltas_per_second(self) -> float:
        return self.deltas / self.wall if self.wall else 0.0

    @property
    def replies_per_second(self) -> float:
        return self.replies / self.wall if self.wall else 0.0


def chunk_texts(count: int) -> list[str]:
    return [f" w{i}" for i in range(count)]


def reply_script(args, replies: int) -> list[dict]:
    one = {"chunks": chunk_texts(args.chunks), "delay_between_chunks": args.chunk_delay}
    return [one] * replies


def control(provider_url: str, path: str, payload) -> None:
    import httpx

    base = provider_url.removesuffix("/v1")
    response = httpx.post(f"{base}/_control/{path}", json=payload, timeout=30)
    response.raise_for_status()


def provider_requests(provider_url: str) -> int:
    import httpx

    base = provider_url.removesuffix("/v1")
    return len(httpx.get(f"{base}/_control/requests", timeout=30).json())


def record(side: Side, started: float, arrivals: list[float], args) -> None:
    if len(arrivals) != args.chunks:
        raise BenchError(f"{side.name}: {len(arrivals)} deltas arrived, expected {args.chunks}")
    side.ttfd.append(arrivals[0] - started)
    for index, arrived in enumerate(arrivals):
        side.lags.append(arrived - started - index * args.chunk_delay)
    side.deltas += len(arrivals)
    side.replies += 1


# --- direct: plain clients on the provider ---------------------------------------------


async def direct_send(client, provider_url: str, side: Side, args, measured: bool) -> None:
    body = {"model": MODEL, "input": [{"role": "user", "content": "Hello"}], "stream": True}
    arrivals, texts = [], []
    started = time.perf_counter()
    async with client.stream("POST", f"{provider_url}/responses", json=body) as response:
        if response.status_code != 200:
            raise BenchError(f"direct: provider answered {response.status_code}")
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event.get("type") == "response.output_text.delta":
                arrivals.append(time.perf_counter())
                texts.append(event["delta"])
    if texts != chunk_texts(args.chunks):
        raise BenchError(f"direct: deltas {texts[:5]}… differ from the script")
    if measured:
        record(side, started, arrivals, args)


async def direct_client(client, provider_url: str, side: Side, phases: asyncio.Barrier, args) -> None:
    await phases.wait()  # all clients ready
    for _ in range(args.warmup):
        await direct_send(client, provider_url, side, args, measured=False)
    await phases.wait()  # everyone warmed up: the measured part starts together
    for _ in range(args.rounds):
        await direct_send(client, provider_url, side, args, measured=True)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes (all their threads), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


async def run_phases(side: Side, clients: list, phases: asyncio.Barrier) -> None:
    """Start the clients, wait until all are ready, then until all warmed up; time the rest."""
    tasks = [asyncio.create_task(client) for client in clients]
    waiting = asyncio.ensure_future(asyncio.gather(*tasks))
    try:
        for _ in range(2):
            barrier = asyncio.ensure_future(phases.wait())
            await asyncio.wait({barrier, waiting}, timeout=SIDE_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():
                waiting.result()  # a client failed before the measured part: raise its error
            if not barrier.done():
                raise BenchError(f"{side.name}: clients did not get ready in time")
        started, cpu = time.perf_counter(), cpu_seconds(side.server_pids)
        await asyncio.wait_for(waiting, SIDE_TIMEOUT)
        side.wall = time.perf_counter() - started
        side.server_cpu = cpu_seconds(side.server_pids) - cpu
    finally:
        waiting.cancel()
        for task in tasks:
            task.cancel()


async def run_direct(provider_url: str, args, pids: list[int]) -> Side:
    import httpx

    side = Side("direct", server_pids=pids)
    limits = httpx.Limits(max_connections=args.clients + 10, max_keepalive_connections=args.clients + 10)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:
        phases = asyncio.Barrier(args.clients + 1)
        await run_phases(side, [direct_client(client, provider_url, side, phases, args) for _ in range(args.clients)],
                         phases)
    return side


# --- app: WebSocket clients on Daphne (directly or through nginx) ----------------------


async def create_conversations(base_url: str, count: int) -> list[str]:
    import httpx

    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        ids = []
        for i in range(count):
            response = await client.post("/api/conversations/", json={"persona": "elion", "title": f"Load {i}"})
            if response.status_code != 201:
                raise BenchError(f"creating a conversation answered {response.status_code}: {response.text[:300]}")
            ids.append(response.json()["id"])
        return ids


async def app_send(ws, side: Side, args, round_no: int, measured: bool) -> None:
    arrivals, texts = [], []
    started = time.perf_counter()
    await ws.send(json.dumps({"type": "send", "content": f"Load round {round_no}: how are you?"}))
    while True:
        frame = json.loads(await ws.recv())
        kind = frame.get("type")
        if kind == "delta":
            arrivals.append(time.perf_counter())
            texts.append(frame["text"])
        elif kind == "done":
            if frame.get("status") != "complete":
                raise BenchError(f"{side.name}: reply finished {frame.get('status')!r}")
            break
        elif kind == "error":
            raise BenchError(f"{side.name}: error frame {frame}")
    if "".join(texts) != "".join(chunk_texts(args.chunks)):
        raise BenchError(f"{side.name}: deltas {texts[:5]}… differ from the script")
    if measured:
        record(side, started, arrivals, args)


async def app_client(ws_url: str, side: Side, phases: asyncio.Barrier, args) -> None:
    import websockets

    async with websockets.connect(ws_url, max_size=None, open_timeout=60, ping_interval=None) as ws:
        await phases.wait()  # every socket open: connecting is not in the figures
        for round_no in range(args.warmup):
            await app_send(ws, side, args, round_no, measured=False)
        await phases.wait()
        for round_no in range(args.warmup, args.warmup + args.rounds):
            await app_send(ws, side, args, round_no, measured=True)


async def run_app(name: str, base_url: str, args, pids: list[int]) -> Side:
    side = Side(name, server_pids=pids)
    ids = await create_conversations(base_url, args.clients)
    ws_base = base_url.replace("http://", "ws://", 1)
    phases = asyncio.Barrier(args.clients + 1)
    clients = [app_client(f"{ws_base}/ws/conversations/{cid}/", side, phases, args) for cid in ids]
    await run_phases(side, clients, phases)
    return side


# --- report --------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def report(sides: list[Side], args, database: str, requests: int) -> list[str]:
    direct = sides[0]
    lines = [
        f"load {time.strftime('%Y-%m-%d %H:%M')}: {args.clients} concurrent clients × {args.rounds} measured sends "
        f"(after {args.warmup} warm-up), "
        f"{args.chunks} deltas per reply paced {args.chunk_delay * 1000:.0f} ms by the scripted provider; "
        f"database {database}; load average {os.getloadavg()[0]:.1f}",
        "",
        f"{'side':<30} {'first delta ms p50':>18} {'p95':>8} {'per delta ms p50':>17} {'p95':>8} "
        f"{'deltas/s':>9} {'replies/s':>9} {'server CPU ms/reply':>20}",
    ]
    for side in sides:
        lines.append(
            f"{side.name:<30} {ms(percentile(side.ttfd, 50)):>18} {ms(percentile(side.ttfd, 95))} "
            f"{ms(percentile(side.lags, 50)):>17} {ms(percentile(side.lags, 95))} "
            f"{side.deltas_per_second:9.0f} {side.replies_per_second:9.1f} "
            f"{side.server_cpu * 1000 / max(side.replies, 1):20.1f}"
        )
    lines.append("")
    for side in sides[1:]:
        lines.append(
            f"{side.name}: adds {ms(percentile(side.lags, 50) - percentile(direct.lags, 50)).strip()} ms per delta "
            f"at p50, {ms(percentile(side.lags, 95) - percentile(direct.lags, 95)).strip()} ms at p95; "
            f"throughput {side.deltas_per_second / direct.deltas_per_second:.2f}× direct"
        )
    if len(sides) > 2:
        one, scaled = sides[1], sides[2]
        lines.append(
            f"throughput ratio {scaled.name} / {one.name}: {scaled.deltas_per_second / one.deltas_per_second:.2f} "
            f"(deltas/s), {scaled.replies_per_second / one.replies_per_second:.2f} (replies/s)"
        )
    app = sides[1]
    if app.server_cpu:
        lines.append(
            f"one Daphne process spends {app.server_cpu * 1000 / app.replies:.1f} ms of CPU per reply "
            f"({app.server_cpu * 1000 / app.deltas:.2f} ms per delta): about {app.replies / app.server_cpu:.0f} "
            f"replies/s per fully used core (database server CPU not included)"
        )
    sends = len(sides) * args.clients * (args.warmup + args.rounds)
    lines.append(f"provider requests: {requests} ({sends} sends in all, warm-up included)")
    return lines


# --- main ----------------------------------------------------------------------------


def migrate(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)


async def measure(args, provider_url: str, app_url: str, scaled_url: str | None, pids: dict) -> list[Side]:
    sides = []
    total = args.clients * (args.warmup + args.rounds)
    control(provider_url, "script", reply_script(args, total))
    sides.append(await run_direct(provider_url, args, pids["provider"]))
    control(provider_url, "script", reply_script(args, total))
    sides.append(await run_app("app, 1 Daphne (WebSocket)", app_url, args, pids["app"]))
    if scaled_url:
        control(provider_url, "script", reply_script(args, total))
        sides.append(
            await run_app(f"nginx -> {args.workers} Daphne (WebSocket)", scaled_url, args, pids["scaled"])
        )
    return sides


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="measured sends per client, one after another")
    parser.add_argument(
        "--warmup", type=int, default=1,
        help="unmeasured sends per client first (the first send of a conversation also builds its stored prompt)",
    )
    parser.add_argument("--chunks", type=int, default=20, help="text deltas per reply")
    parser.add_argument("--chunk-delay", type=float, default=0.01, help="provider pacing between deltas (s)")
    parser.add_argument("--workers", type=int, default=1, help="2+: also measure nginx -> N Daphne workers")
    parser.add_argument("--keep-temp", action="store_true", help="keep the temp dir (logs) for inspection")
    args = parser.parse_args(argv)
    if min(args.clients, args.rounds, args.chunks, args.workers) < 1 or args.warmup < 0:
        parser.error("--clients, --rounds, --chunks and --workers must be at least 1, --warmup at least 0")

    tmp = Path(tempfile.mkdtemp(prefix="elion-load-"))
    processes: list[subprocess.Popen] = []
    server_url = os.environ.get("DATABASE_URL") or None
    created_db = None
    try:
        database_url = None
        if server_url:
            database_url, created_db = pg_create_database(server_url)
        clock = time.perf_counter()
        provider, provider_url = start_provider(tmp)
        processes.append(provider)
        env = app_env(tmp / "data", database_url, provider_url)
        (tmp / "data").mkdir()
        migrate(env)
        print(f"provider up, database migrated: {time.perf_counter() - clock:.1f} s", flush=True)
        clock = time.perf_counter()
        app_url, scaled_url = start_servers(tmp, env, args.workers, processes)
        # processes: provider, the single Daphne, then the scaled workers and nginx (its master only:
        # with `worker_processes 1` the proxying worker is a child, counted below through /proc).
        pids = {
            "provider": [provider.pid],
            "app": [processes[1].pid],
            "scaled": [p.pid for p in processes[2:]] + nginx_workers(processes[-1].pid if scaled_url else None),
        }
        print(f"servers up: {time.perf_counter() - clock:.1f} s", flush=True)
        clock = time.perf_counter()
        sides = asyncio.run(measure(args, provider_url, app_url, scaled_url, pids))
        requests = provider_requests(provider_url)
        print(f"measured: {time.perf_counter() - clock:.1f} s", flush=True)
        print()
        for line in report(sides, args, "postgresql" if database_url else "sqlite", requests):
            print(line)
        return 0
    finally:
        for process in reversed(processes):
            stop_process(process)
        if created_db and server_url:
            pg_drop_database(server_url, created_db)
        if args.keep_temp:
            print(f"temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
