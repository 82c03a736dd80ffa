"""Years of life (issue 40): does a send, the chat page and the server's memory cost the same at 100,000
messages as at 10?

One run, both databases (SQLite, and a throwaway PostgreSQL server from
scripts/pg_tmp.sh unless DATABASE_URL names one). For each database, one
database holds a thread of each of `--sizes` live-branch messages (10, 1,000,
10,000, 30,000, 100,000), built by `bench/long_thread_build.py` through the
app's own `message_append` (one transaction per thread, alternating user and
assistant turns of 200–600 characters, the provider binding the server
computes) and dated as a thread of months has them (`spread_over_months`:
`created_at` and `updated_at` an hour old and older), so every row is past any
60-second recheck window. One Daphne serves it (the app in its own process,
real HTTP), with the scripted provider (`tests.support.scripted_provider`) in
another.

Per database, in this order:

1. the server's RSS once it has answered `/api/health/` (before any thread);
2. a warm-up round per thread, smallest first (`bench.long_thread.one_round`:
   the chat page, the first API page, a send whose stored prompt it writes,
   a rewind to the original head, the SDK replaying the recorded request and
   checking it equals the app's), and the server's RSS after each: "RSS after";
3. `--rounds` measured rounds, threads interleaved, their order rotating:
   page  GET /c/<id>/, until the body is read;
   API   GET /api/conversations/<id>/messages/?limit=50;
   added the send through the app until its first delta (POST …/messages/,
         SSE) minus the `openai` SDK's own time for the same request body
         against the same provider (the app's way, WIRE_AS_IS), paired by
         round; the table shows medians;
4. the server's RSS after all of it, and its growth over the RSS after the
   smallest thread's warm-up ("growth": what serving the long threads left in
   the process);
5. `GET /api/conversations/<id>/messages/` (no `limit`, the whole live branch)
   of the largest thread, read to the end: its time, bytes, and the server's
   peak RSS during it over its RSS before (`VmHWM` after resetting it through
   /proc/<pid>/clear_refs).

Targets (same run): added time and the chat page at the largest ÷ the
smallest ≤ 1.5×, RSS growth ≤ 64 MiB after serving the largest thread, and
the whole list of the largest thread with peak RSS growth ≤ 64 MiB.

Building 100,000 messages through the app takes minutes, so the built
databases are kept under `--cache DIR` (default `.bench-cache/years`, git-ignored)
and reused when nothing that shapes them changed: the key hashes the sizes,
the seed, the builder, `transcript/append.py` and every migration, so a tree
whose append writes new columns builds its own. SQLite's file is copied;
PostgreSQL's is a `pg_dump` restored into a fresh database (then `VACUUM
ANALYZE`, as the builder does).

    .venv/bin/python -m bench.years                                   # full: ≈ 25 min the first time
    .venv/bin/python -m bench.years --sizes 10,1000,10000 --rounds 3  # quick
    .venv/bin/python -m bench.years --database sqlite --cache /tmp/years-cache

A benchmark, not a test: it asserts nothing about timing. It fails only when
the app or the provider misbehaves. Everything it starts is stopped and its
temp dir removed, also on Ctrl-C (the cache stays).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.long_thread import (  # noqa: E402 - after the path fix above
    build,
    database_list,
    int_list,
    one_round,
    time_get,
)
from bench.long_thread_report import Samples  # noqa: E402
from bench.servers import (  # noqa: E402
    API_KEY,
    BenchError,
    app_env,
    collect_static,
    pg_create_database,
    pg_drop_database,
    pg_dump_file,
    pg_restore_file,
    postgres_server,
    start_daphne,
    start_provider,
    stop_process,
)

BUILDER = ROOT / "bench" / "long_thread_build.py"
DEFAULT_SIZES = [10, 1_000, 10_000, 30_000, 100_000]
MiB = 1024 * 1024
TARGET_RATIO = 1.5
TARGET_GROWTH_MIB = 64


# --- the cached databases ------------------------------------------------------------


def cache_key(args) -> str:
    """What shapes a built database: the sizes, seed and API selector, the builder, the append and every
    migration."""
    digest = hashlib.sha256(json.dumps({"sizes": args.sizes, "seed": args.seed, "selector": args.selector}).encode())
    shaping = [BUILDER, ROOT / "transcript" / "append.py", *sorted(ROOT.glob("*/migrations/*.py"))]
    for path in shaping:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def spec(args) -> dict:
    return {"seed": args.seed, "cases": [{"label": f"{n:,}", "length": n} for n in args.sizes]}


def prepared_database(database: str, env: dict[str, str], data_dir: Path, args, tmp: Path) -> dict:
    """Fill the app's database (SQLite in `data_dir`, or env's DATABASE_URL) from the cache, building it
    (and caching it) when the cache has no copy for this key; the builder's result."""
    key = cache_key(args)
    entry = args.cache / f"{database}-{key}"
    built_file = entry / "built.json"
    if built_file.exists():
        print(f"{database}: threads from the cache ({entry})", flush=True)
        if database == "sqlite":
            shutil.copy2(entry / "elion.sqlite3", data_dir / "elion.sqlite3")
        else:
            pg_restore_file(env["DATABASE_URL"], entry / "elion.dump")
        return json.loads(built_file.read_text())
    print(f"{database}: building threads of {', '.join(f'{n:,}' for n in args.sizes)} messages "
          f"through message_append (cache key {key}) …", flush=True)
    started = time.perf_counter()
    built = build(ROOT, env, spec(args), tmp / f"build-{database}.log")
    print(f"{database}: built in {time.perf_counter() - started:.0f} s", flush=True)
    partial = entry.with_name(entry.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    if database == "sqlite":
        shutil.copy2(data_dir / "elion.sqlite3", partial / "elion.sqlite3")
    else:
        pg_dump_file(env["DATABASE_URL"], partial / "elion.dump")
    (partial / "built.json").write_text(json.dumps(built))
    shutil.rmtree(entry, ignore_errors=True)
    partial.rename(entry)
    return built


def provider_start(tmp: Path, key: str) -> tuple[subprocess.Popen, str]:
    """The scripted provider on a port fixed by the cache key: every row records the provider's route
    (its address included, `transcript.provider.config.route_fingerprint`), so a cached database is
    served by a provider at the address it was built with."""
    port = 20_000 + int(key[:8], 16) % 30_000
    try:
        return start_provider(tmp, port)
    except BenchError as exc:
        raise BenchError(f"the scripted provider could not listen on {port} (the cache key's port): {exc}") from exc


# --- the server's memory -------------------------------------------------------------


def proc_status(pid: int, field: str) -> int:
    """A /proc/<pid>/status figure in bytes (VmRSS, VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise BenchError(f"/proc/{pid}/status has no {field}")


def peak_reset(pid: int) -> None:
    """Reset the process's peak RSS (VmHWM) to its current RSS."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def mib(value: float) -> str:
    return f"{value / MiB:,.0f}"


# --- measuring -------------------------------------------------------------------------


async def measure(app_url: str, pid: int, built: dict, provider_url: str, args) -> dict:
    import httpx
    import openai

    threads = built["threads"]
    samples = {thread["label"]: Samples() for thread in threads}
    rss_after: dict[str, int] = {}
    client = httpx.AsyncClient(base_url=app_url, timeout=900)
    sdk = openai.AsyncOpenAI(api_key=API_KEY, base_url=provider_url, max_retries=0, timeout=900)
    try:
        async with httpx.AsyncClient(base_url=provider_url.removesuffix("/v1"), timeout=900) as control:
            await time_get(client, "/api/health/")
            rss_start = proc_status(pid, "VmRSS")
            for thread in threads:  # smallest first: the RSS after serving each
                await one_round(client, control, sdk, thread, args.selector, None)
                rss_after[thread["label"]] = proc_status(pid, "VmRSS")
                print(f"  warm-up {thread['label']}: RSS {mib(rss_after[thread['label']])} MiB", flush=True)
            for round_no in range(args.rounds):
                shift = round_no % len(threads)
                for thread in threads[shift:] + threads[:shift]:
                    await one_round(client, control, sdk, thread, args.selector, samples[thread["label"]])
                print(f"  round {round_no + 1}/{args.rounds} done", flush=True)
            rss_end = proc_status(pid, "VmRSS")
            whole = await whole_list(client, pid, threads[-1])
    finally:
        await sdk.close()
        await client.aclose()
    return {
        "figures": {label: sample.figures() for label, sample in samples.items()},
        "rss_start": rss_start,
        "rss_after": rss_after,
        "rss_end": rss_end,
        "whole": whole,
    }


async def whole_list(client, pid: int, thread: dict) -> dict:
    """`GET …/messages/` without `limit`, read to the end: time, bytes, items and the peak RSS growth."""
    rss_before = proc_status(pid, "VmRSS")
    peak_reset(pid)
    started = time.perf_counter()
    size, items, tail = 0, 0, b""
    marker = b'"siblings":'  # once per message; counted across the chunks' edges
    async with client.stream("GET", f"/api/conversations/{thread['conversation_id']}/messages/") as response:
        if response.status_code != 200:
            raise BenchError(f"the whole list answered {response.status_code}")
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            joined = tail + chunk
            items += joined.count(marker)
            tail = joined[-(len(marker) - 1):]
    seconds = time.perf_counter() - started
    return {
        "label": thread["label"], "seconds": seconds, "bytes": size, "items": items,
        "peak_growth": proc_status(pid, "VmHWM") - rss_before, "rss_before": rss_before,
        "expected": thread["live_messages"],
    }


def run_database(database: str, provider_url: str, tmp: Path, args) -> dict:
    with postgres_server(database) as server_url:
        return _run_on(database, server_url, provider_url, tmp, args)


def _run_on(database: str, server_url: str | None, provider_url: str, tmp: Path, args) -> dict:
    created, daphne = None, None
    try:
        database_url = None
        if server_url:
            database_url, created = pg_create_database(server_url)
            if created is None:
                raise BenchError("the bench needs a fresh database; DATABASE_URL's server refused to create one")
        data_dir = tmp / database / "data"
        data_dir.mkdir(parents=True)
        env = app_env(data_dir, database_url, provider_url)
        env["ELION_API_SELECTOR"] = args.selector
        built = prepared_database(database, env, data_dir, args, tmp)
        collect_static(ROOT, env)  # the chat page as `make run` serves it
        daphne, app_url = start_daphne(tmp, env, False, log_name=f"daphne-{database}.log")
        result = asyncio.run(measure(app_url, daphne.pid, built, provider_url, args))
        result["vendor"] = database
        result["labels"] = [thread["label"] for thread in built["threads"]]
        return result
    finally:
        stop_process(daphne)
        if created:
            pg_drop_database(server_url, created)


# --- the report ------------------------------------------------------------------------


def ratio(value: float, base: float) -> str:
    return f"×{value / base:.2f}" if base > 0 else "—"


def report(result: dict) -> list[str]:
    labels, figures = result["labels"], result["figures"]
    first, last = labels[0], labels[-1]
    base = figures[first]
    lines = [
        f"### {result['vendor']}",
        "",
        "| messages | app → 1st delta ms | SDK ms | added ms | added × | page ms | page × | API page ms | API × "
        "| request items | RSS after MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label in labels:
        f = figures[label]
        lines.append(
            f"| {label} | {f['app'] * 1000:.1f} | {f['sdk'] * 1000:.1f} | {f['added'] * 1000:.1f} "
            f"| {ratio(f['added'], base['added'])} | {f['page'] * 1000:.1f} | {ratio(f['page'], base['page'])} "
            f"| {f['api'] * 1000:.1f} | {ratio(f['api'], base['api'])} | {f['request_items']:.0f} "
            f"| {mib(result['rss_after'][label])} |"
        )
    growth = result["rss_end"] - result["rss_after"][first]
    whole = result["whole"]
    added_x = figures[last]["added"] / base["added"] if base["added"] > 0 else float("inf")
    page_x = figures[last]["page"] / base["page"]
    api_x = figures[last]["api"] / base["api"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    if whole["items"] != whole["expected"]:
        lines.append(f"\n**the whole list held {whole['items']:,} messages, the live branch {whole['expected']:,}**")
    lines += [
        "",
        f"- RSS: {mib(result['rss_start'])} MiB before any thread, {mib(result['rss_after'][first])} MiB after the "
        f"{first}-message thread, {mib(result['rss_end'])} MiB after serving all: growth "
        f"**{growth / MiB:,.1f} MiB** (target ≤ {TARGET_GROWTH_MIB}: {verdict(growth <= TARGET_GROWTH_MIB * MiB)})",
        f"- {last} ÷ {first}: added **×{added_x:.2f}** (target ≤ {TARGET_RATIO}: {verdict(added_x <= TARGET_RATIO)}), "
        f"page **×{page_x:.2f}** ({verdict(page_x <= TARGET_RATIO)}), API first page ×{api_x:.2f}",
        f"- `GET …/messages/` (no limit) of the {whole['label']}-message thread: {whole['items']:,} messages, "
        f"{whole['bytes'] / MiB:,.1f} MiB in {whole['seconds']:.1f} s; peak RSS growth "
        f"**{whole['peak_growth'] / MiB:,.1f} MiB** (target ≤ {TARGET_GROWTH_MIB}: "
        f"{verdict(whole['peak_growth'] <= TARGET_GROWTH_MIB * MiB)})",
    ]
    return lines


def sizes_list(text: str) -> list[int]:
    values = int_list(text)
    if values != sorted(set(values)):
        raise argparse.ArgumentTypeError("give the sizes in rising order, each once")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=sizes_list, default=DEFAULT_SIZES,
                        help="live-branch messages per thread, rising, even (the first is every ratio's base)")
    parser.add_argument("--database", type=database_list, default=["sqlite", "postgres"],
                        help="sqlite, postgres or sqlite,postgres")
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds per thread (after one warm-up)")
    parser.add_argument("--selector", choices=("chat.completions", "responses"), default="chat.completions")
    parser.add_argument("--seed", type=int, default=20261203,
                        help="the threads' texts; also fixes the cache entry and the scripted provider's port, "
                             "so two runs at once need two seeds")
    parser.add_argument("--cache", type=Path, default=ROOT / ".bench-cache" / "years",
                        help="where the built databases are kept between runs")
    parser.add_argument("--keep-temp", action="store_true", help="keep the temp dir (logs) for inspection")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    args.cache = args.cache.resolve()
    args.cache.mkdir(parents=True, exist_ok=True)

    # A `kill` (SIGTERM) unwinds like Ctrl-C, so the servers it started are stopped and its temp dir removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="elion-years-"))
    provider = None
    try:
        provider, provider_url = provider_start(tmp, cache_key(args))
        outputs = []
        for database in args.database:
            outputs.append(report(run_database(database, provider_url, tmp, args)))
            print("\n" + "\n".join(outputs[-1]) + "\n", flush=True)
        print(f"\nsizes {', '.join(f'{n:,}' for n in args.sizes)}; {args.rounds} rounds; medians; "
              f"load average {os.getloadavg()[0]:.1f}; total runtime {time.perf_counter() - started:.0f} s")
        if len(outputs) > 1:
            print("\n\n" + "\n\n".join("\n".join(lines) for lines in outputs))
        return 1 if any("**the whole list held" in line for lines in outputs for line in lines) else 0
    finally:
        stop_process(provider)
        if args.keep_temp:
            print(f"temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
