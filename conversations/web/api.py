"""HTTP API for settings, folders, conversations and messages (docs/api.md).

Views translate requests into service calls and results into responses.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Generator, Iterable
from uuid import UUID

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.rules.health import reconciliation_status
from conversations.models import Conversation, Folder, Message
from conversations.sending.commands import send_command_from_payload
from conversations.sending.events import reply_events
from conversations.sending.prepare import PreparedReply, retry_prepare, send_prepare
from conversations.sending.stop import reply_stop
from conversations.sending.watch import ReplyWatch, live_reply_id, parse_after_seq
from conversations.services.settings_service import assistant_settings_update
from conversations.services.threads.services import (
    conversation_create,
    conversation_rewind,
    conversation_switch,
    conversation_update,
    folder_create,
    folder_delete,
    folder_update,
)
from conversations.web import export as conversation_export
from conversations.web import message_pages
from conversations.web import schema as docs
from conversations.web import serializers as s
from elion.base import access
from elion.base.database_errors import connection_release
from elion.base.errors import InvalidInput, ServiceError
from elion.base.input_checks import json_load_checked
from elion.base.login_throttle import login_device_remember, login_failed, login_retry_after, login_succeeded
from elion.base.rows import id_or_not_found
from transcript.access import access_conversation
from transcript.assistant_settings import assistant_settings_get
from transcript.attachments.manifests import manifests_for
from transcript.deletion import access_deletion, conversation_delete_forever, deletion_receipt
from transcript.leases import stale_streams_read_as_interrupted
from transcript.siblings import Siblings, children_in, siblings_for, siblings_of
from transcript.tree import tree_messages, walk_to_root


def validated(serializer_class: type[serializers.Serializer], data: object) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def patch_fields(request: Request, allowed: Iterable[str]) -> dict:
    if not isinstance(request.data, dict):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    return {key: request.data[key] for key in allowed if key in request.data}


class HealthView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(responses=docs.HealthSerializer)
    def get(self, request: Request) -> Response:
        return Response({"status": "ok", "reconciliation": reconciliation_status()})


class LoginView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(request=docs.LoginSerializer, responses={200: docs.HealthSerializer, 401: docs.ErrorSerializer})
    def post(self, request: Request) -> Response:
        retry_after = login_retry_after(request._request)
        if retry_after is not None:
            return Response(
                {"error": "too_many_attempts", "detail": f"Too many wrong passwords; try again in {retry_after} s."},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(retry_after)},
            )
        password = request.data.get("password") if isinstance(request.data, dict) else None
        if not isinstance(password, str) or not access.check_owner_password(password):
            login_failed(request._request)
            return Response(
                {"error": "invalid_credentials", "detail": "That password is not the owner's."},
                status=status.HTTP_401_UNAUTHORIZED,
            )
        login_succeeded(request._request)
        access.owner_login(request._request)
        return login_device_remember(request._request, Response({"status": "ok"}))


class SettingsView(APIView):
    @extend_schema(responses=docs.SettingsSerializer)
    def get(self, request: Request) -> Response:
        return Response(s.settings_repr(assistant_settings_get()))

    @extend_schema(request=s.SettingsPatchSerializer, responses={200: docs.SettingsSerializer, 400: docs.ErrorSerializer})
    def patch(self, request: Request) -> Response:
        changes = validated(s.SettingsPatchSerializer, request.data)
        return Response(s.settings_repr(assistant_settings_update(**changes)))


class FolderListView(APIView):
    @extend_schema(responses=docs.FolderListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"results": [s.folder_repr(f) for f in Folder.objects.all()]})

    @extend_schema(request=s.FolderSerializer, responses={201: docs.FolderOutSerializer, 400: docs.ErrorSerializer})
    def post(self, request: Request) -> Response:
        data = validated(s.FolderSerializer, request.data)
        folder = folder_create(name=data.get("name", ""), hidden=data.get("hidden", False))
        return Response(s.folder_repr(folder), status=status.HTTP_201_CREATED)


class FolderDetailView(APIView):
    @extend_schema(request=s.FolderSerializer, responses={200: docs.FolderOutSerializer, 404: docs.ErrorSerializer})
    def patch(self, request: Request, folder_id: int) -> Response:
        changes = validated(s.FolderSerializer, patch_fields(request, ("name", "hidden")))
        return Response(s.folder_repr(folder_update(folder_id=folder_id, changes=changes)))

    @extend_schema(responses={204: None, 404: docs.ErrorSerializer})
    def delete(self, request: Request, folder_id: int) -> Response:
        folder_delete(folder_id=folder_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ConversationListView(APIView):
    @extend_schema(responses=docs.ConversationListSerializer)
    def get(self, request: Request) -> Response:
        queryset = Conversation.objects.all()
        if request.query_params.get("trashed") in ("1", "true"):
            queryset = queryset.filter(trashed=True)
        elif request.query_params.get("trashed") != "all":
            queryset = queryset.filter(trashed=False)
        return Response({"results": [s.conversation_repr(c) for c in queryset[:500]]})

    @extend_schema(request=s.ConversationCreateSerializer, responses={201: docs.ConversationSerializer, 400: docs.ErrorSerializer})
    def post(self, request: Request) -> Response:
        data = validated(s.ConversationCreateSerializer, request.data)
        conversation = conversation_create(
            persona=data.get("persona") or "elion", title=data.get("title"), folder_id=data.get("folder_id"),
            private=data["private"], use_memories=data["use_memories"],
        )
        return Response(s.conversation_repr(conversation), status=status.HTTP_201_CREATED)


class ConversationDetailView(APIView):
    @extend_schema(responses={200: docs.ConversationSerializer, 404: docs.ErrorSerializer})
    def get(self, request: Request, conversation_id: str) -> Response:
        return Response(s.conversation_repr(access_conversation(conversation_id)))

    @extend_schema(request=s.ConversationPatchSerializer, responses={200: docs.ConversationSerializer, 404: docs.ErrorSerializer})
    def patch(self, request: Request, conversation_id: str) -> Response:
        changes = validated(s.ConversationPatchSerializer, patch_fields(request, ("title", "folder_id")))
        return Response(s.conversation_repr(conversation_update(conversation_id=conversation_id, changes=changes)))

    @extend_schema(responses={200: dict, 404: docs.ErrorSerializer, 409: docs.ErrorSerializer})
    def delete(self, request: Request, conversation_id: str) -> Response:
        """Delete a trashed conversation forever; answers the receipt (counts only, no text)."""
        return Response(deletion_receipt(conversation_delete_forever(conversation_id=conversation_id)))


class DeletionReceiptView(APIView):
    @extend_schema(responses={200: dict, 404: docs.ErrorSerializer})
    def get(self, request: Request, deletion_id: str) -> Response:
        return Response(deletion_receipt(access_deletion(deletion_id)))


class ConversationRewindView(APIView):
    @extend_schema(request=s.RewindSerializer, responses={200: docs.ConversationSerializer, 404: docs.ErrorSerializer})
    def post(self, request: Request, conversation_id: str) -> Response:
        data = validated(s.RewindSerializer, request.data)
        conversation = conversation_rewind(conversation_id=conversation_id, message_id=data["message_id"])
        return Response(s.conversation_repr(conversation))


class ConversationSwitchView(APIView):
    @extend_schema(
        request=s.SwitchSerializer,
        responses={200: docs.ConversationSerializer, 400: docs.ErrorSerializer, 404: docs.ErrorSerializer,
                   409: docs.ErrorSerializer},
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        """Show another version: the head moves to the newest end under `message_id`; nothing is deleted."""
        data = validated(s.SwitchSerializer, request.data)
        conversation = conversation_switch(conversation_id=conversation_id, message_id=data["message_id"])
        return Response(s.conversation_repr(conversation))


class ConversationExportView(APIView):
    @extend_schema(responses={(200, 'text/markdown'): str, (200, 'application/json'): dict, 400: docs.ErrorSerializer})
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = access_conversation(conversation_id)
        fmt = request.query_params.get("format", "markdown")
        if fmt == "json":
            return streamed_response(request, conversation_export.export_json_chunks(conversation), "application/json")
        if fmt != "markdown":
            raise InvalidInput("format must be markdown or json.", code="unknown_export_format")
        response = streamed_response(
            request, conversation_export.export_markdown_chunks(conversation), "text/markdown; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="conversation-{conversation.id}.md"'
        return response


_END = object()


def streamed_response(request: Request, chunks: Generator[str | bytes, None, None], content_type: str) -> StreamingHttpResponse:
    """Stream `chunks` (a sync generator that reads the database) as the body.

    Under ASGI (Daphne) Django would collect a sync iterator into a list before
    sending a byte, so there the body is an async iterator that pulls one chunk
    at a time on the request's own thread (`thread_sensitive`, the thread and
    database connection the view ran on); a WSGI request (the test client)
    streams the generator itself.
    """
    if not isinstance(request._request, ASGIRequest):
        return StreamingHttpResponse(chunks, content_type=content_type)
    pull = sync_to_async(next, thread_sensitive=True)

    async def body() -> AsyncIterator[str | bytes]:
        try:
            while (chunk := await pull(chunks, _END)) is not _END:
                yield chunk
        finally:
            await sync_to_async(chunks.close, thread_sensitive=True)()  # a client gone mid-way: stop reading rows

    return StreamingHttpResponse(body(), content_type=content_type)


class MessageListView(APIView):
    """GET lists the live branch. POST (the send) is `SendView`, routed here too."""

    @extend_schema(responses=docs.MessageListSerializer)
    def get(self, request: Request, conversation_id: str) -> Response:
        page = message_pages.page_request(request.query_params)  # 400s before the 404: no row is read for bad input
        conversation = access_conversation(conversation_id)
        if page is None:
            # The whole tree is read for the branch anyway: the versions come from the same rows.
            tree = tree_messages(conversation)
            branch = walk_to_root(tree, conversation.head_id)
            children = children_in(tree.values())
            return Response({"results": messages_repr(branch, {m.id: siblings_of(children, m) for m in branch})})
        window = message_pages.message_window(conversation, page)
        return Response({
            "results": messages_repr(window.messages, siblings_for(conversation.id, window.messages)),
            "has_more_before": window.has_more_before,
            "has_more_after": window.has_more_after,
        })


def messages_repr(messages: list[Message], siblings: dict[UUID, Siblings]) -> list[dict]:
    stale_streams_read_as_interrupted(messages)  # reads don't write: the sweep stores it
    manifests = manifests_for(messages)
    return [s.message_repr(m, manifests.get(m.id, []), siblings[m.id]) for m in messages]


# --- Sending: async, because the reply streams ------------------------------


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



# --- Watching and stopping a reply (resumable streams) --------------------------


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
