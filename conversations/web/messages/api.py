"""HTTP API for messages (docs/api.md "Messages"): the message list, the send and the retry (a
streamed reply, SSE, or JSON with `?stream=false`), and watching or stopping a reply.

Thin: the send pipeline lives in `conversations.sending`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from uuid import UUID

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.sending.commands import send_command_from_payload
from conversations.sending.events import reply_events
from conversations.sending.prepare import PreparedReply, retry_prepare, send_prepare
from conversations.sending.stop import reply_stop
from conversations.sending.watch import ReplyWatch, live_reply_id, parse_after_seq
from conversations.services.message_selectors import message_page
from conversations.web import message_paging
from conversations.web import schema as docs
from conversations.web import serializers as s
from conversations.web.messages.branch_list import branch_list_response
from elion.base.database_errors import connection_release
from elion.base.errors import InvalidInput, ServiceError
from elion.base.input_checks import json_load_checked
from elion.base.rows import id_or_not_found
from transcript.access import access_conversation
from transcript.models import Message


class MessageListView(APIView):
    """GET lists the live branch. POST (the send) is `SendView`, routed here too."""

    @extend_schema(responses=docs.MessageListSerializer)
    def get(self, request: Request, conversation_id: str) -> Response:
        page = message_paging.page_request(request.query_params)  # 400s before the 404: no row is read for bad input
        conversation = access_conversation(conversation_id)
        if page is None:
            # The whole live branch, streamed a segment at a time (memory flat in the thread's length).
            return branch_list_response(request, conversation)
        found = message_page(conversation, limit=page.limit, before=page.before, around=page.around)
        return Response(s.message_page_repr(found))


def sse_frame(name: str, data: dict) -> bytes:
    # A delta's `seq` is its event id: a client reconnecting with it as
    # `Last-Event-ID` gets the rest of the reply (`ReplyWatchView`).
    event_id = f"id: {data['seq']}\n" if name == "delta" and "seq" in data else ""
    return f"{event_id}event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def sse_response(events: AsyncIterator[tuple[str, dict]]) -> StreamingHttpResponse:
    async def frames() -> AsyncIterator[str]:
        # Every middleware has answered by now: the request's connection goes back to the pool for as
        # long as the stream lasts (the reply's own writes check one out each time).
        await sync_to_async(connection_release)()
        async for name, data in events:
            yield sse_frame(name, data)

    response = StreamingHttpResponse(frames(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def error_response(exc: ServiceError) -> JsonResponse:
    return JsonResponse(exc.as_dict(), status=exc.status)


async def sse_or_json(request: HttpRequest, prepare: Callable[[], PreparedReply]) -> HttpResponse:
    """Run a prepared reply as an SSE stream, or collect it for `?stream=false`."""
    try:
        prepared = await sync_to_async(prepare)()
    except ServiceError as exc:
        return error_response(exc)
    if request.GET.get("stream", "true").lower() in ("false", "0"):
        await sync_to_async(connection_release)()  # none held while the reply is collected
        return await collect_json(prepared)

    return sse_response(reply_events(prepared))  # starts the reply now, before any byte is sent


async def collect_json(prepared: PreparedReply) -> JsonResponse:
    diagnostics, error = None, None
    async for name, data in reply_events(prepared):
        if name == "diagnostics":
            diagnostics = data
        elif name == "error":
            error = data

    def load() -> tuple[dict, dict]:
        user = Message.objects.get(pk=prepared.user_message_id)
        assistant = Message.objects.get(pk=prepared.assistant_message_id)
        return s.message_repr(user), s.message_repr(assistant)

    user, assistant = await sync_to_async(load)()
    body = {"user_message": user, "assistant_message": assistant, "diagnostics": diagnostics}
    if error:
        body["error"] = error
    return JsonResponse(body, status=200)


def parse_json_body(request: HttpRequest) -> dict:
    payload = json_load_checked(request.body or b"{}")
    if not isinstance(payload, dict):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    return payload


def parse_conversation_id(raw: str) -> UUID:
    return id_or_not_found(raw, kind="uuid", missing="No conversation has that id.", code="conversation_not_found")


def csrf_checked(request: HttpRequest) -> None:
    """Session-authenticated sends need the CSRF token like any session write."""
    if not settings.ELION_PROTECTED or getattr(request, "elion_bearer", False):
        return
    reason = CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})
    if reason is not None:
        raise ServiceError("CSRF verification failed; reload the page.", code="csrf_failed", status=403)


@method_decorator(csrf_exempt, name="dispatch")
class SendView(View):
    """`GET` lists messages (delegated); `POST` sends and streams the reply."""

    async def get(self, request: HttpRequest, conversation_id: str) -> HttpResponse:
        return await sync_to_async(MessageListView.as_view())(request, conversation_id=conversation_id)

    async def post(self, request: HttpRequest, conversation_id: str) -> HttpResponse:
        def prepare() -> PreparedReply:
            # One thread hop for the checks and the transaction: each hop and
            # each extra query is paid before the first delta.
            csrf_checked(request)
            conversation_uuid = parse_conversation_id(conversation_id)
            command = send_command_from_payload(conversation_uuid, parse_json_body(request))
            return send_prepare(command)

        return await sse_or_json(request, prepare)


@method_decorator(csrf_exempt, name="dispatch")
class RetryView(View):
    async def post(self, request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
        def prepare() -> PreparedReply:
            csrf_checked(request)
            return retry_prepare(conversation_id=conversation_id, message_id=message_id)

        return await sse_or_json(request, prepare)


async def watch_response(request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
    """SSE of one reply: its stored text after the client's `Last-Event-ID`, then the live rest."""
    try:
        after_seq = parse_after_seq(request.headers.get("Last-Event-ID") or request.GET.get("after_seq"))
        watch = ReplyWatch(conversation_id=conversation_id, message_id=message_id, after_seq=after_seq)
        await watch.open()
    except ServiceError as exc:
        return error_response(exc)

    async def events() -> AsyncIterator[tuple[str, dict]]:
        try:
            async for event in watch.events():
                yield event
        finally:
            await watch.close()

    return sse_response(events())


@method_decorator(csrf_exempt, name="dispatch")  # GET only: any write is a 405, never an HTML CSRF page
class ReplyWatchView(View):
    """`GET …/messages/{id}/stream/`: follow one reply (any status; a finished one ends at once)."""

    async def get(self, request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
        return await watch_response(request, conversation_id, message_id)


@method_decorator(csrf_exempt, name="dispatch")  # GET only, as above
class LiveReplyWatchView(View):
    """`GET …/stream/`: follow the reply streaming in the conversation now; 204 when none is."""

    async def get(self, request: HttpRequest, conversation_id: str) -> HttpResponse:
        try:
            message_id = await sync_to_async(live_reply_id)(conversation_id=conversation_id)
        except ServiceError as exc:
            return error_response(exc)
        if message_id is None:
            return HttpResponse(status=204)
        return await watch_response(request, conversation_id, message_id)


@method_decorator(csrf_exempt, name="dispatch")
class ReplyStopView(View):
    """`POST …/messages/{id}/stop/`: 200 with the stopped reply, 202 while its run has not confirmed."""

    async def post(self, request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
        try:
            await sync_to_async(csrf_checked)(request)
            message, settled = await reply_stop(conversation_id=conversation_id, message_id=message_id)
        except ServiceError as exc:
            return error_response(exc)
        body = await sync_to_async(s.message_repr)(message)  # reads the attachment manifest
        return JsonResponse(body, status=200 if settled else 202)
