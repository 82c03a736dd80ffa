"""How much latency does the app add before the first streamed token?

Measured in one run, interleaved round by round:

  A  POST /api/conversations/{id}/messages/ through Daphne (real app, real
     database, a loaded 20-message thread each round) until the first
     `event: delta` frame's data arrives at the client;
  B  the official `openai` SDK calling the same scripted provider directly
     with the exact input the app sent in its latest A round, until the first
     `response.output_text.delta` event;
  B' the same call with the conversation passed as `extra_body`, the way the
     app's request builder passes it (WIRE_AS_IS in transcript/provider/request_builder.py:
     the SDK's params transform is skipped, about 8 ms of CPU here).
  B and B' send the other fields of the app's request (store, include, prompt cache key…) as
  typed arguments, as the builder does; only the conversation differs. `--window N` makes them
  replay a long thread's window of about N input items instead of the app's latest input (the
  app's own first send carries what fits its budget), so the transform's cost is seen at that size.

A - B is what the app adds (target: at most 10 ms at the median); A - B' is
the like-for-like figure, since the app's own provider call is B', not B.

    .venv/bin/python -m bench.send_overhead                      # full size, SQLite
    .venv/bin/python -m bench.send_overhead --conversations 500 --rounds 40   # quick
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.send_overhead; \
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                    # PostgreSQL

`--profile` runs Daphne with timing hooks (`bench/send_hooks.py`, served as
this module's `instrumented_application`) and prints where the app's time goes, stage by
stage, on the same clock as the client (CLOCK_MONOTONIC is system-wide).
`--variant a,b` starts a second, instrumented Daphne (A') with candidate
hot-path fixes monkeypatched in, and interleaves A, A' and B in the same run;
see `bench.send_hooks.VARIANTS`. `--variant no_send_work` makes A' the lower bound: what the app
adds when the send itself costs nothing. `--variant-a` applies variants to A. `--primed` measures a thread's second send (stored prompt reused).
A "floor" side times a malformed send (400) to show the framework's own cost.

A benchmark, not a test: it asserts nothing about timing. It fails only when
the app or the provider misbehaves (non-200, error event, missing delta).
Everything it starts (provider, Daphne, a fresh PostgreSQL database when
DATABASE_URL is set) is stopped and its temp dir removed, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

from bench import send_hooks  # noqa: E402 - after the path fix above
from bench.send_overhead_report import profile_report  # noqa: E402
from bench.servers import (  # noqa: E402
    API_KEY,
    CLEARED_ENV,
    MODEL,
    TRACE_ENV,
    VARIANT_ENV,
    BenchError,
    app_env,
    ms,
    percentile,
    pg_create_database,
    pg_drop_database,
    start_daphne,
    start_provider,
    stop_process,
)
from bench.thread_data import load_data, long_window  # noqa: E402

QUICK_REPLY = {"chunks": ["Quick", " scripted", " reply."]}  # no delays: the provider answers at once


# --- measurement ------------------------------------------------------------------


async def time_app(client, conversation_id: uuid.UUID, content: str) -> dict[str, float]:
    """One send through the app: seconds to response headers and to the first delta's data."""
    start = time.perf_counter()
    first = headers = None
    event = done = error = None
    async with client.stream(
        "POST", f"/api/conversations/{conversation_id}/messages/", json={"content": content}
    ) as response:
        headers = time.perf_counter()
        if response.status_code != 200:
            body = (await response.aread()).decode(errors="replace")
            raise BenchError(f"send answered {response.status_code}: {body[:500]}")
        # Read to the end (not just to `done`) so the keep-alive connection goes back to the pool.
        async for line in response.aiter_lines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                if event == "delta" and first is None:
                    first = time.perf_counter()
                elif event == "error":
                    error = line[6:]
                elif event == "done":
                    done = json.loads(line[6:])
    if error or first is None or not done or done.get("status") != "complete":
        raise BenchError(f"send did not stream a complete reply: error={error} done={done}")
    return {"start": start, "headers": headers, "first": first, "ttfd": first - start}


async def time_floor(client, conversation_id: uuid.UUID) -> dict[str, float]:
    """The framework floor: a send with a malformed body, refused (400) before any send work."""
    start = time.perf_counter()
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/", content=b"{", headers={"content-type": "application/json"}
    )
    end = time.perf_counter()
    if response.status_code != 400:
        raise BenchError(f"malformed send answered {response.status_code}, expected 400")
    return {"start": start, "ttfd": end - start}


async def time_sdk(sdk, items: list, fields: dict, *, as_extra_body: bool = False) -> dict[str, float]:
    """B: the SDK called the usual way (`input=`); B': the conversation passed as
    `extra_body`, the way the app's request builder passes it (WIRE_AS_IS in
    transcript/provider/request_builder.py), which skips the SDK's params transform. `fields`: the
    app's other request fields, typed arguments in both."""
    cpu = time.process_time()
    start = time.perf_counter()
    first = None
    completed = False
    if as_extra_body:
        stream = await sdk.responses.create(model=MODEL, stream=True, **fields, extra_body={"input": items})
    else:
        stream = await sdk.responses.create(model=MODEL, input=items, stream=True, **fields)
    async with stream:
        async for event in stream:
            if event.type == "response.output_text.delta" and first is None:
                first = time.perf_counter()
                cpu = time.process_time() - cpu
            elif event.type == "response.completed":
                completed = True
    if first is None or not completed:
        raise BenchError("the SDK stream had no text delta or no completion")
    return {"start": start, "first": first, "ttfd": first - start, "cpu": cpu}


async def measure(app_urls: dict[str, str], provider_url: str, conversation_ids: list[uuid.UUID], args) -> dict:
    """Round by round: one send per app server (A, and A' with --variant) and one SDK call (B).

    The order rotates every round so no side always follows another. Each send uses a fresh thread.
    """
    import httpx
    import openai

    provider_root = provider_url.rsplit("/v1", 1)[0]
    sides = [*app_urls, "B", "B'", "floor"]
    results: dict[str, list] = {side: [] for side in sides}
    request_shape: dict = {}
    last_input = None
    last_fields: dict = {}
    window = long_window(args.window) if args.window else None
    picks = iter(conversation_ids)
    clients = {side: httpx.AsyncClient(base_url=url, timeout=60) for side, url in app_urls.items()}
    sdk = openai.AsyncOpenAI(api_key=API_KEY, base_url=provider_url, max_retries=0, timeout=60)
    try:
        async with httpx.AsyncClient(base_url=provider_root, timeout=10) as control:
            for round_no in range(args.warmup + args.rounds):
                shift = round_no % len(sides)
                for side in sides[shift:] + sides[:shift]:
                    if side in ("B", "B'") and last_input is None:
                        continue  # nothing recorded yet to replay (first warm-up round only)
                    if side == "floor":
                        sample = await time_floor(clients["A"], conversation_ids[0])
                        if round_no >= args.warmup:
                            results[side].append(sample)
                        continue
                    await control.post("/_control/clear")
                    await control.post("/_control/script", json=[QUICK_REPLY])
                    if side in ("B", "B'"):
                        sample = await time_sdk(sdk, window or last_input, last_fields, as_extra_body=side == "B'")
                    else:
                        app = clients[side]
                        cid = next(picks)
                        if args.primed:  # an unmeasured first send stores the thread's static prompt
                            await time_app(app, cid, "Good morning.")
                            await control.post("/_control/clear")
                            await control.post("/_control/script", json=[QUICK_REPLY])
                        sample = await time_app(app, cid, f"Round {round_no}: how did the garden look this morning?")
                        sample["conversation"] = str(cid)
                        body = (await control.get("/_control/requests")).json()[-1]["body"]
                        last_input = body["input"]  # B replays exactly what the app sent
                        last_fields = {k: v for k, v in body.items() if k not in ("input", "model", "stream")}
                        request_shape = {
                            "items": len(last_input),
                            "characters": sum(len(str(i.get("content", ""))) for i in last_input),
                        }
                    if round_no >= args.warmup:
                        results[side].append(sample)
    finally:
        await sdk.close()
        for client in clients.values():
            await client.aclose()
    results["request_shape"] = request_shape
    if window:
        results["window_shape"] = {"items": len(window), "characters": len(json.dumps(window))}
    return results


def __getattr__(name: str):
    """`bench.send_overhead:instrumented_application`, the name Daphne serves (a baseline tree's too):
    the app with `bench.send_hooks`' timing hooks, built there on first use."""
    if name != "instrumented_application":
        raise AttributeError(name)
    return send_hooks.instrumented_application


# --- report -------------------------------------------------------------------------------

def summary(results: dict, counts: dict, timings: dict, args) -> list[str]:
    b = [s["ttfd"] for s in results["B"]]
    b_lean = [s["ttfd"] for s in results["B'"]]
    app_sides = [side for side in results if side not in ("B", "B'", "floor", "request_shape", "window_shape")]
    n = len(results["A"])
    lines = [
        f"database: {counts['vendor']}; loaded {counts['conversations']:,} conversations, "
        f"{counts['messages']:,} messages (memory snapshots: {'yes' if counts['snapshots'] else 'no model'})",
        f"migrate {timings['migrate']:.1f} s; bulk load {counts['load_seconds']:.1f} s; "
        f"ANALYZE {counts['analyze_seconds']:.1f} s",
        f"rounds: {n} measured after {args.warmup} warm-up; sides {', '.join(app_sides)}, B and B' interleaved, "
        "order rotating every round; "
        + ("primed: each measured send is the thread's second" if args.primed else "each send is the thread's first"),
        f"machine: {os.cpu_count()} CPUs; load average before/after the rounds: "
        f"{timings['load_before']:.2f} / {timings['load_after']:.2f}",
        f"app request to provider: {results['request_shape'].get('items')} input items, "
        f"{results['request_shape'].get('characters'):,} characters",
    ]
    if "window_shape" in results:
        lines.append(
            f"B and B' replay a long thread's window (--window): {results['window_shape']['items']:,} input items, "
            f"{results['window_shape']['characters']:,} characters of JSON"
        )
    if len(app_sides) > 1:
        if args.baseline:
            lines.append(
                f"A = the tree at {args.baseline}; A' = this tree"
                + (f" with --variant {args.variant}" if args.variant else "")
                + " (a second Daphne on the same database)"
            )
        else:
            lines.append(f"A' = the same app with --variant {args.variant} (a second Daphne on the same database)")
    lines += ["", f"{'time to first delta':36} {'median ms':>10} {'p95 ms':>8} {'mean ms':>8} {'min ms':>8}"]
    rows = []
    for side in app_sides:
        rows.append((f"{side} app (HTTP → Daphne → provider)", [s["ttfd"] for s in results[side]]))
    rows.append(("B SDK → provider directly", b))
    rows.append(("B' the same, conversation as extra_body", b_lean))
    for side in app_sides:
        rows.append((f"{side} response headers", [s["headers"] - s["start"] for s in results[side]]))
    rows.append(("floor: malformed send → 400 (A)", [s["ttfd"] for s in results["floor"]]))
    for label, values in rows:
        lines.append(
            f"{label:36} {ms(statistics.median(values)):>10} {ms(percentile(values, 95)):>8} "
            f"{ms(statistics.fmean(values)):>8} {ms(min(values)):>8}"
        )
    cpu_b, cpu_lean = [s["cpu"] for s in results["B"]], [s["cpu"] for s in results["B'"]]
    lines += [
        "",
        f"typed `input` against `extra_body`: ratio median(B) / median(B'): "
        f"{statistics.median(b) / statistics.median(b_lean):.2f} "
        f"({ms(statistics.median(b))} against {ms(statistics.median(b_lean))} ms); bench CPU to the first delta "
        f"{ms(statistics.median(cpu_b))} against {ms(statistics.median(cpu_lean))} ms",
    ]
    lines.append("")
    for side in app_sides:
        a = [s["ttfd"] for s in results[side]]
        paired = [x - y for x, y in zip(a, b, strict=True)]
        added = statistics.median(a) - statistics.median(b)
        lines += [
            f"{side}: app added latency, median({side}) - median(B): {ms(added)} ms"
            f"  (median of paired {side}-B: {ms(statistics.median(paired))} ms, p95 {ms(percentile(paired, 95))} ms)",
            f"{side}: ratio median({side}) / median(B): {statistics.median(a) / statistics.median(b):.2f}",
            f"{side}: target (the app adds at most 10 ms at the median) → " + ("MET" if added <= 0.010 else "NOT MET"),
            f"{side}: like for like, median({side}) - median(B') (the SDK called as the app calls it): "
            f"{ms(statistics.median(a) - statistics.median(b_lean))} ms",
        ]
    if len(app_sides) > 1:
        base = [s["ttfd"] for s in results["A"]]
        other = [s["ttfd"] for s in results[app_sides[1]]]
        paired = [y - x for x, y in zip(base, other, strict=True)]
        lines.append(
            f"variant effect: median(A') - median(A) = {ms(statistics.median(other) - statistics.median(base))} ms "
            f"(median of paired A'-A: {ms(statistics.median(paired))} ms)"
        )
    return lines


# --- main ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--messages-per-conversation", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument(
        "--primed",
        action="store_true",
        help="send once (unmeasured) into each picked thread first, so the measured send reuses a stored prompt",
    )
    parser.add_argument("--profile", action="store_true", help="time the app's stages inside Daphne")
    parser.add_argument("--variant", default="", help="comma-separated candidate fixes (implies --profile)")
    parser.add_argument(
        "--variant-a", default="", help="variants for A too (e.g. no_send_work, to compare fixes to the lower bound)"
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="a source tree (e.g. `git archive main | tar -x -C DIR`) that A runs from; A' runs this tree "
        "(implies --profile; both share the database, so the schema must match)",
    )
    parser.add_argument(
        "--window", type=int, default=0,
        help="B and B' replay a long thread's window of about this many input items (e.g. 2400), not the app's input",
    )
    parser.add_argument("--keep-temp", action="store_true", help="keep the temp dir (logs) for inspection")
    args = parser.parse_args(argv)
    two_servers = bool(args.variant or args.baseline)
    if (args.warmup + args.rounds) * (2 if two_servers else 1) > args.conversations:
        parser.error("--conversations must be at least --warmup + --rounds (each round uses a fresh thread)")
    if args.baseline and not (args.baseline / "elion" / "asgi.py").exists():
        parser.error(f"--baseline {args.baseline} is not a source tree of this app")
    instrumented = args.profile or two_servers or bool(args.variant_a)

    tmp = Path(tempfile.mkdtemp(prefix="elion-bench-"))
    provider = None
    daphnes: list[subprocess.Popen] = []
    server_url = os.environ.get("DATABASE_URL") or None
    database_url, created_db = (None, None)
    try:
        if server_url:
            database_url, created_db = pg_create_database(server_url)
        provider, provider_url = start_provider(tmp)
        env = app_env(tmp / "data", database_url, provider_url)
        os.environ.update(env)
        for name in CLEARED_ENV:
            if name not in env:
                os.environ.pop(name, None)

        import django
        from django.core.management import call_command

        django.setup()
        started = time.perf_counter()
        call_command("migrate", verbosity=0, interactive=False)
        timings = {"migrate": time.perf_counter() - started}
        print(f"loading {args.conversations:,} conversations × {args.messages_per_conversation} messages …", flush=True)
        ids, counts = load_data(args.conversations, args.messages_per_conversation, args.seed)
        print(f"loaded in {counts['load_seconds']:.1f} s (ANALYZE {counts['analyze_seconds']:.1f} s)", flush=True)
        # side -> (variant, source tree); with --baseline, A is the baseline tree and A' this one.
        servers = {"A": (args.variant_a, args.baseline.resolve() if args.baseline else ROOT)}
        if two_servers:
            servers["A'"] = (args.variant, ROOT)
        picks = random.Random(args.seed).sample(ids, (args.warmup + args.rounds) * len(servers))

        app_urls, trace_files = {}, {}
        for side, (variant, root) in servers.items():
            server_env = dict(env)
            trace_files[side] = tmp / f"traces-{len(trace_files)}.jsonl"
            if instrumented:
                server_env[TRACE_ENV] = str(trace_files[side])
                server_env[VARIANT_ENV] = variant
            process, app_urls[side] = start_daphne(
                tmp, server_env, instrumented, log_name=f"daphne-{len(daphnes)}.log", root=root
            )
            daphnes.append(process)

        import asyncio

        timings["load_before"] = os.getloadavg()[0]
        results = asyncio.run(measure(app_urls, provider_url, picks, args))
        timings["load_after"] = os.getloadavg()[0]
        print()
        print(
            f"send_overhead {time.strftime('%Y-%m-%d %H:%M')} — variant: {args.variant or 'none'}"
            + (f"; baseline: {args.baseline}" if args.baseline else "")
        )
        for line in summary(results, counts, timings, args):
            print(line)
        if instrumented:
            for side in servers:
                print()
                print(f"--- where {side}'s time goes (server-side hooks) ---")
                for line in profile_report(results[side], results["B"], trace_files[side]):
                    print(line)
        return 0
    finally:
        for process in daphnes:
            stop_process(process)
        stop_process(provider)
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may never have been set up
            pass
        if created_db and server_url:
            pg_drop_database(server_url, created_db)
        if args.keep_temp:
            print(f"temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
