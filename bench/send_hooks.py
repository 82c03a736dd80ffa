"""Timing hooks inside the Daphne process (`bench.send_overhead --profile`) and the candidate
hot-path fixes (`--variant`): `instrumented_application` is the app with them, built on first use.

Daphne serves it as `bench.send_overhead:instrumented_application` (the name a baseline tree serves too).
"""

from __future__ import annotations

import json
import os
import time
import uuid

from bench.servers import TRACE_ENV, VARIANT_ENV, BenchError

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

    # The client is made and looked up where the request is sent: the request builder's `provider_call`
    # (transcript/provider/request_builder.py); in older trees, the gateway's `_client`, looked up by the
    # adapters' own modules.
    try:
        from transcript.provider import request_builder
    except ImportError:
        request_builder = None
    original_client = (request_builder or provider_gateway)._client

    def client(config):
        started = time.perf_counter()
        try:
            return original_client(config)
        finally:
            trace = _trace()
            trace["client_lookup"] = trace.get("client_lookup", 0.0) + time.perf_counter() - started

    if request_builder is None:
        provider_responses._client = client
        provider_chat._client = client
    else:
        request_builder._client = client

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
    """`instrumented_application`: the app with the timing hooks and the chosen variants, built on first use."""
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
