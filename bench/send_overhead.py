"""How much latency does the app add before the first streamed token?

Measured in one run, interleaved round by round:

  A  POST /api/conversations/{id}/messages/ through Daphne (real app, real
     database, a loaded 20-message thread each round) until the first
     `event: delta` frame's data arrives at the client;
  B  the official `openai` SDK calling the same scripted provider directly
     with the exact input the app sent in its latest A round, until the first
     `response.output_text.delta` event;
  B' the same call with the conversation passed as `extra_body`, the way the
     app's gateway passes it (WIRE_AS_IS in conversations/provider_gateway.py:
     the SDK's params transform is skipped, about 8 ms of CPU here).

A - B is what the app adds (target: at most 10 ms at the median); A - B' is
the like-for-like figure, since the app's own provider call is B', not B.

    .venv/bin/python -m bench.send_overhead                      # full size, SQLite
    .venv/bin/python -m bench.send_overhead --conversations 500 --rounds 40   # quick
    eval "$(scripts/pg_tmp.sh start)"; .venv/bin/python -m bench.send_overhead; \
        scripts/pg_tmp.sh stop "$PG_TMP_DIR"                    # PostgreSQL

`--profile` runs Daphne with timing hooks (this module's
`instrumented_application`) and prints where the app's time goes, stage by
stage, on the same clock as the client (CLOCK_MONOTONIC is system-wide).
`--variant a,b` starts a second, instrumented Daphne (A') with candidate
hot-path fixes monkeypatched in, and interleaves A, A' and B in the same run;
see VARIANTS. `--variant no_send_work` makes A' the lower bound: what the app
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
import math
import os
import random
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODEL = "gpt-5.5"
API_KEY = "bench-key"
QUICK_REPLY = {"chunks": ["Quick", " scripted", " reply."]}  # no delays: the provider answers at once
TRACE_ENV = "ELION_BENCH_TRACE_FILE"
VARIANT_ENV = "ELION_BENCH_VARIANTS"
# Settings the bench pins or clears so the app runs its embedded defaults, unprotected on loopback.
_CLEARED_ENV = (
    "DATABASE_URL",
    "ELION_SQLITE_PATH",
    "ELION_OWNER_PASSWORD",
    "ELION_API_TOKEN",
    "ELION_TESTING",
    "DJANGO_DEBUG",
    "REDIS_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ELION_API_SELECTOR",
    "ELION_MODEL",
    "ELION_PROVIDER_ID",
    "ELION_DEPLOYMENT",
    TRACE_ENV,
    VARIANT_ENV,
)


class BenchError(RuntimeError):
    pass


# --- statistics ---------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


# --- processes ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"process exited early:\n{log.read_text()[-3000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"port {port} did not open:\n{log.read_text()[-3000:]}")


def stop_process(process: subprocess.Popen | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def start_provider(tmp: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = tmp / "provider.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.scripted_provider", "--port", str(port)],
        cwd=ROOT,
        stdout=open(log, "wb"),  # noqa: SIM115 - lives as long as the process
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port, process, log)
    return process, f"http://127.0.0.1:{port}/v1"


def start_daphne(
    tmp: Path, env: dict[str, str], instrumented: bool, log_name: str = "daphne.log", root: Path = ROOT
) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = tmp / log_name
    app = "bench.send_overhead:instrumented_application" if instrumented else "elion.asgi:application"
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), app],
        cwd=root,
        env=env,
        stdout=open(log, "wb"),  # noqa: SIM115
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port, process, log)
    return process, f"http://127.0.0.1:{port}"


# --- databases ------------------------------------------------------------------


def pg_create_database(url: str) -> tuple[str, str | None]:
    """A fresh database on the server DATABASE_URL names; (url to use, name to drop)."""
    import psycopg

    name = f"elion_bench_{os.getpid()}_{secrets.token_hex(3)}"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        print(f"! cannot create a fresh database ({exc}); using DATABASE_URL's database as it is")
        return url, None
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}")), name


def pg_drop_database(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def in_process_bench_close(server_url: str | None, drop: str | None, data_dir: Path | None = None) -> None:
    """The end of an in-process bench: close Django's connections, drop its PostgreSQL database, remove its data dir."""
    from django.db import connections

    connections.close_all()
    if server_url and drop:
        pg_drop_database(server_url, drop)
    if data_dir is not None:
        shutil.rmtree(data_dir, ignore_errors=True)


def app_env(data_dir: Path, database_url: str | None, provider_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED_ENV}
    env.update(
        ELION_DATA_DIR=str(data_dir),
        DJANGO_SETTINGS_MODULE="elion.settings",
        OPENAI_API_KEY=API_KEY,
        OPENAI_BASE_URL=provider_url,
        ELION_MODEL=MODEL,
        ELION_API_SELECTOR="responses",
        ELION_LOG_LEVEL="WARNING",
        PYTHONDONTWRITEBYTECODE="1",
    )
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


# --- data -----------------------------------------------------------------------

_PROSE = (
    "morning light garden tea quiet letter river memory walk music rain window book friend "
    "promise story evening candle ocean forest road home laughter question answer dream "
    "voice silence thread season winter summer autumn spring coffee kitchen stars moon "
    "notebook poem song city bridge train journey tomorrow yesterday today careful gentle "
    "bright slow warm honest curious patient small wide deep open simple strange familiar"
)
_WORDS = _PROSE.split()


def text_pools(rng: random.Random) -> tuple[list[str], list[str]]:
    def text(lo: int, hi: int) -> str:
        target = rng.randint(lo, hi)
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < target:
            words.append(rng.choice(_WORDS))
        return (" ".join(words).capitalize() + ".")[: target + 1]

    return [text(40, 320) for _ in range(97)], [text(200, 1400) for _ in range(89)]


def bound_fields() -> dict[str, str]:
    """The provider binding the server will compute, stamped on loaded rows (as real history has)."""
    try:
        from transcript.provider.binding import binding_fields, configured_provider
    except ImportError:
        return {}
    return binding_fields(configured_provider())


def load_data(n_conversations: int, per_conversation: int, seed: int) -> tuple[list[uuid.UUID], dict]:
    """Bulk-load valid trees: alternating user/assistant chains, seq 1..M, head at the tip."""
    from django.apps import apps
    from django.db import connection, transaction

    from conversations.models import Conversation, Message, MessageStatus, Role

    rng = random.Random(seed)
    users, assistants = text_pools(rng)
    binding = bound_fields()
    try:
        snapshot_model = apps.get_model("memories", "ConversationMemorySnapshot")
    except LookupError:
        snapshot_model = None
    from django.utils import timezone

    now = timezone.now()
    ids: list[uuid.UUID] = []
    chunk = 500
    started = time.perf_counter()
    with transaction.atomic():
        for start in range(0, n_conversations, chunk):
            conversations, messages, snapshots = [], [], []
            for i in range(start, min(start + chunk, n_conversations)):
                cid = uuid.UUID(int=rng.getrandbits(128), version=4)
                parent = None
                for seq in range(1, per_conversation + 1):
                    user = seq % 2 == 1
                    pool = users if user else assistants
                    mid = uuid.UUID(int=rng.getrandbits(128), version=4)
                    messages.append(
                        Message(
                            id=mid,
                            conversation_id=cid,
                            parent_id=parent,
                            seq=seq,
                            role=Role.USER if user else Role.ASSISTANT,
                            content=pool[(i * 31 + seq) % len(pool)],
                            status=MessageStatus.COMPLETE,
                            **binding,
                        )
                    )
                    parent = mid
                conversations.append(
                    Conversation(id=cid, title=f"Bench thread {i + 1}", head_id=parent, last_seq=per_conversation)
                )
                if snapshot_model is not None:
                    snapshots.append(snapshot_model(conversation_id=cid, captured_at=now, provenance="captured"))
                ids.append(cid)
            Conversation.objects.bulk_create(conversations)
            Message.objects.bulk_create(messages)
            if snapshots:
                snapshot_model.objects.bulk_create(snapshots)
    # The search index rows the triggers wrote are tokenised before ANALYZE, as a
    # running app's would be; statistics taken while every row was pending would
    # steer the per-send "pending rows" lookup away from its partial index.
    from transcript.search_index import message_search_index_sync

    message_search_index_sync()
    load_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    analyze_seconds = time.perf_counter() - started
    counts = {
        "conversations": Conversation.objects.count(),
        "messages": Message.objects.count(),
        "load_seconds": load_seconds,
        "analyze_seconds": analyze_seconds,
        "snapshots": snapshot_model is not None,
        "vendor": connection.vendor,
    }
    connection.close()
    return ids, counts


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


async def time_sdk(sdk, items: list, *, as_extra_body: bool = False) -> dict[str, float]:
    """B: the SDK called the usual way (`input=`); B': the conversation passed as
    `extra_body`, the way the app's gateway passes it (WIRE_AS_IS in
    conversations/provider_gateway.py), which skips the SDK's params transform."""
    cpu = time.process_time()
    start = time.perf_counter()
    first = None
    completed = False
    if as_extra_body:
        stream = await sdk.responses.create(model=MODEL, stream=True, extra_body={"input": items})
    else:
        stream = await sdk.responses.create(model=MODEL, input=items, stream=True)
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
                        sample = await time_sdk(sdk, last_input, as_extra_body=side == "B'")
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
    return results


# --- profiling hooks (run inside the Daphne process) ----------------------------------------

_TRACES: dict[str, dict[str, float]] = {}
_ACTIVE: list[str] = [""]  # the conversation of the send in flight (the bench sends one at a time)


def _trace() -> dict[str, float]:
    return _TRACES.setdefault(_ACTIVE[0], {})


def _mark(name: str) -> None:
    _trace().setdefault(name, time.perf_counter())


def _timed(name: str, func):
    """Wrap a sync function: accumulate its wall time under `name` in the active trace."""

    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            trace = _trace()
            trace[name] = trace.get(name, 0.0) + time.perf_counter() - started

    wrapper.__wrapped__ = func
    return wrapper


def _install_hooks() -> None:
    from django.db import transaction

    try:  # this tree's layout
        from continuity.rules import request_store as send_request
        from conversations.sending import prepare as send_pipeline
        from conversations.sending import run as send_run
        from conversations.web.messages import api
        from transcript.provider import chat as provider_chat
        from transcript.provider import gateway as provider_gateway
        from transcript.provider import responses as provider_responses
    except ImportError:  # a baseline tree from before the sub-packages
        from conversations import api, provider_gateway, send_pipeline
        from conversations import send_pipeline as send_request
        from conversations import send_pipeline as send_run

        provider_chat = provider_responses = provider_gateway  # one module held both adapters

    # Sub-stages of send_prepare, patched where send_prepare looks them up.
    for name in (
        "access_conversation",
        "_ensure_no_live_stream",
        "transcript_write_guard",
        "send_context_load",
        "attachments_preverify",
        "message_search_index_sync",
        "provider_binding_check",
        "_resolve_parent",
        "static_prompt_ensure",
        "static_prompt_ready",
        "_start_reply",
        "reply_request_build",
        "live_branch",
        "assemble_request",
    ):
        for module in (send_pipeline, send_request):  # the older tree has one module, the newer two
            if hasattr(module, name):
                setattr(module, name, _timed(f"prepare.{name}", getattr(module, name)))

    if hasattr(send_pipeline, "_send_commit"):
        # This tree: disk work first, then one durable transaction (`_send_commit`).
        inner_commit = send_pipeline._send_commit.__wrapped__  # the body under @transaction.atomic(durable=True)

        def send_commit(command, **kwargs):
            with transaction.atomic(durable=True):
                result = inner_commit(command, **kwargs)
                _mark("prepare_body_end")
            return result

        send_pipeline._send_commit = send_commit
        real_prepare = send_pipeline.send_prepare

        def send_prepare(command):
            _mark("prepare_start")
            cpu = time.thread_time()
            result = real_prepare(command)
            _mark("prepare_end")  # after COMMIT
            _trace()["prepare.cpu (thread CPU time, whole send_prepare)"] = time.thread_time() - cpu
            return result

    else:
        inner_prepare = send_pipeline.send_prepare.__wrapped__  # older trees: the body under @transaction.atomic

        def send_prepare(command):
            _mark("prepare_start")
            cpu = time.thread_time()
            with transaction.atomic():
                result = inner_prepare(command)
                _mark("prepare_body_end")
            _mark("prepare_end")  # after COMMIT
            _trace()["prepare.cpu (thread CPU time, whole send_prepare)"] = time.thread_time() - cpu
            return result

    api.send_prepare = send_prepare

    original_post = api.SendView.post

    async def post(self, request, conversation_id):
        _mark("view_start")
        return await original_post(self, request, conversation_id)

    api.SendView.post = post

    original_stream = provider_gateway.stream_reply

    async def stream_reply(config, messages, *args, **kwargs):  # whatever else the gateway takes, passed on
        _mark("stream_call")
        async for event in original_stream(config, messages, *args, **kwargs):
            if isinstance(event, provider_gateway.TextDelta):
                _mark("provider_first_delta")
            yield event

    provider_gateway.stream_reply = stream_reply

    original_client = provider_gateway._client

    def client(config):
        started = time.perf_counter()
        try:
            return original_client(config)
        finally:
            trace = _trace()
            trace["client_lookup"] = trace.get("client_lookup", 0.0) + time.perf_counter() - started

    # The adapters look the client up in their own modules (transcript/provider/{responses,chat}.py).
    provider_responses._client = client
    provider_chat._client = client

    # Before the view: connection set-up, the owner lookup, every SQL statement.
    from django.core.signals import request_started
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.utils import CursorWrapper

    from elion.base import access

    request_started.connect(lambda **kwargs: _mark("request_started"), weak=False)
    BaseDatabaseWrapper.connect = _timed("db.connect", BaseDatabaseWrapper.connect)
    access.get_owner_user = _timed("middleware.get_owner_user", access.get_owner_user)
    original_mw = access.OwnerAccessMiddleware.__call__

    def owner_mw(self, request):
        _mark("owner_middleware")
        return original_mw(self, request)

    access.OwnerAccessMiddleware.__call__ = owner_mw
    for method in ("execute", "executemany"):
        original = getattr(CursorWrapper, method)

        def counted(self, *args, _original=original, **kwargs):
            trace = _trace()
            trace["db.statements"] = trace.get("db.statements", 0) + 1
            return _original(self, *args, **kwargs)

        setattr(CursorWrapper, method, _timed("db.execute", counted))

    original_emit = send_run.ReplyRun.emit
    trace_file = os.environ[TRACE_ENV]

    def emit(self, name, data):
        if name == "delta" and "emit_first_delta" not in _trace():
            _mark("emit_first_delta")
            trace = _trace()
            trace["db.statements_to_first_delta"] = trace.get("db.statements", 0)
            trace["db.execute_to_first_delta"] = trace.get("db.execute", 0.0)
            trace["cpu_to_first_delta"] = time.process_time() - trace.get("cpu_asgi_in", 0.0)
        original_emit(self, name, data)
        if name == "done":
            key = str(self.prepared.conversation_id)
            trace = _TRACES.pop(key, {})
            trace["conversation"] = key
            with open(trace_file, "a") as handle:
                handle.write(json.dumps(trace) + "\n")

    send_run.ReplyRun.emit = emit


# Candidate hot-path fixes, applied in the server with --variant NAME (comma-separated).
# Each mirrors a small change to the named file; the bench measures it before anyone edits that file.
# The 2026-11-30 candidates (lean_prepare, lean_view, lazy_owner, pg_pool) have landed in the app
# (1d27f06 and the settings' PostgreSQL pool), so their monkeypatched copies are gone; to compare
# committed code, run A from an export of the older commit with --baseline.
VARIANTS: dict[str, str] = {
    "no_send_work": "a lower bound, not a fix: after one real send, send_prepare returns a copy of that "
    "send's prepared reply (no query, no write) and the reply's flushes and final write are skipped, "
    "so A' is the framework, the provider call and SSE delivery alone",
}


def _variant_no_send_work() -> None:
    """What the app would add if the send itself cost nothing.

    The request still goes through Daphne, the middleware chain, the view's
    CSRF check and body parse, one thread hop each way, the provider call
    (the same input every round) and the SSE response; only the database
    work of the send and of the streaming reply is gone.
    """
    import dataclasses

    try:
        from conversations.sending import run as send_run
        from conversations.web.messages import api
    except ImportError:  # a baseline tree from before the sub-packages
        from conversations import api
        from conversations import send_pipeline as send_run

    real_prepare = api.send_prepare
    template: list = []

    def send_prepare(command):
        if not template:
            template.append(real_prepare(command))
            return template[0]
        return dataclasses.replace(
            template[0],
            conversation_id=command.conversation_id,
            user_message_id=uuid.uuid4(),
            assistant_message_id=uuid.uuid4(),
        )

    api.send_prepare = send_prepare
    send_run._flush_partial = lambda *args, **kwargs: True
    send_run._renew_lease = lambda *args, **kwargs: True
    send_run._finalise = lambda *args, **kwargs: None


def _apply_variants(names: list[str]) -> None:
    for name in names:
        if name not in VARIANTS:
            raise BenchError(f"unknown variant {name!r}; known: {', '.join(VARIANTS) or 'none'}")
        globals()[f"_variant_{name}"]()


def __getattr__(name: str):
    """`bench.send_overhead:instrumented_application`: the app with timing hooks, built on first use."""
    if name != "instrumented_application":
        raise AttributeError(name)
    from elion.asgi import application

    _install_hooks()
    _apply_variants([v for v in os.environ.get(VARIANT_ENV, "").split(",") if v])

    async def instrumented_application(scope, receive, send):
        if scope["type"] == "http" and scope["path"].endswith("/messages/") and scope["method"] == "POST":
            parts = scope["path"].strip("/").split("/")
            _ACTIVE[0] = parts[2] if len(parts) > 2 else ""
            _TRACES.pop(_ACTIVE[0], None)
            _mark("asgi_in")
            _trace()["cpu_asgi_in"] = time.process_time()
        return await application(scope, receive, send)

    globals()["instrumented_application"] = instrumented_application
    return instrumented_application


# --- report -------------------------------------------------------------------------------

STAGES = (
    ("client → ASGI app", "client_start", "asgi_in"),
    ("ASGI → request_started receivers ran", "asgi_in", "request_started"),
    ("request_started → OwnerAccessMiddleware", "request_started", "owner_middleware"),
    ("OwnerAccessMiddleware → SendView.post", "owner_middleware", "view_start"),
    ("SendView.post → send_prepare (csrf, lookup, parse)", "view_start", "prepare_start"),
    ("send_prepare body", "prepare_start", "prepare_body_end"),
    ("send_prepare COMMIT", "prepare_body_end", "prepare_end"),
    ("prepared → stream_reply called (hop back, task start)", "prepare_end", "stream_call"),
    ("stream_reply → first provider delta (SDK + provider)", "stream_call", "provider_first_delta"),
    ("provider delta → emit", "provider_first_delta", "emit_first_delta"),
    ("emit → client has the delta (queue, SSE, Daphne)", "emit_first_delta", "client_first"),
)


def profile_report(samples: list[dict], sdk_samples: list[dict], trace_file: Path) -> list[str]:
    traces = {}
    if trace_file.exists():
        for line in trace_file.read_text().splitlines():
            trace = json.loads(line)
            traces[trace["conversation"]] = trace
    rows = []
    joined = []
    for sample in samples:
        trace = traces.get(sample["conversation"])
        if trace:
            joined.append({**trace, "client_start": sample["start"], "client_first": sample["first"]})
    if not joined:
        return ["(no server traces)"]
    rows.append(f"server traces joined: {len(joined)}")
    rows.append(f"{'stage':60} {'median ms':>10} {'p95 ms':>8}")
    for label, a, b in STAGES:
        deltas = [t[b] - t[a] for t in joined if a in t and b in t]
        if deltas:
            rows.append(f"{label:60} {ms(statistics.median(deltas)):>10} {ms(percentile(deltas, 95)):>8}")
    cpu = [t["cpu_to_first_delta"] for t in joined if "cpu_to_first_delta" in t]
    sdk_cpu = [s["cpu"] for s in sdk_samples]
    if cpu and sdk_cpu:
        rows.append(
            f"CPU, less disturbed by other load: Daphne process from request arrival to first delta "
            f"{ms(statistics.median(cpu))} ms median; bench process for B (SDK request → first delta) "
            f"{ms(statistics.median(sdk_cpu))} ms; difference {ms(statistics.median(cpu) - statistics.median(sdk_cpu))} ms"
        )
    sub = sorted({k for t in joined for k in t if k.startswith(("prepare.", "db.", "middleware.", "client_lookup"))})
    rows.append("accumulated per send (inclusive wall time; nested stages overlap; db.statements is a count):")
    for key in sub:
        values = [t.get(key, 0.0) for t in joined]
        if key.startswith("db.statements"):
            rows.append(f"  {key:58} {statistics.median(values):>10.0f} {percentile(values, 95):>8.0f}")
        else:
            rows.append(f"  {key:58} {ms(statistics.median(values)):>10} {ms(percentile(values, 95)):>8}")
    return rows


def summary(results: dict, counts: dict, timings: dict, args) -> list[str]:
    b = [s["ttfd"] for s in results["B"]]
    b_lean = [s["ttfd"] for s in results["B'"]]
    app_sides = [side for side in results if side not in ("B", "B'", "floor", "request_shape")]
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
        for name in _CLEARED_ENV:
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
