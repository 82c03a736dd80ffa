"""HTTP API for conversations (docs/api.md "Conversations"): list, create, read, rename or move,
delete forever (and its receipt), rewind, switch version, fork, export.

Views translate requests into service calls and results into responses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.web.conversation_shape import ConversationSerializer, conversation_repr, conversations_repr
from conversations.services.deletion import conversation_delete_forever
from conversations.services.threads.fork import conversation_fork
from conversations.services.threads.thread_writes import (
    conversation_create,
    conversation_rewind,
    conversation_switch,
    conversation_update,
)
from conversations.web import schema as docs
from conversations.web import serializers as s
from conversations.web.threads import export as conversation_export
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput
from transcript.access import access_conversation
from transcript.deletion import access_deletion, deletion_receipt
from transcript.models import Conversation


class ConversationListView(APIView):
    # Named: drf-spectacular called it `conversations_retrieve`, as it calls the detail view's GET.
    @extend_schema(operation_id="conversations_list", responses=docs.ConversationListSerializer)
    def get(self, request: Request) -> Response:
        queryset = Conversation.objects.all()
        if request.query_params.get("trashed") in ("1", "true"):
            queryset = queryset.filter(trashed=True)
        elif request.query_params.get("trashed") != "all":
            queryset = queryset.filter(trashed=False)
        return Response({"results": conversations_repr(list(queryset[:500]))})

    @extend_schema(request=s.ConversationCreateSerializer, responses={201: ConversationSerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        data = s.validated(s.ConversationCreateSerializer, request.data)
        conversation = conversation_create(
            persona=data.get("persona") or "elion", title=data.get("title"), folder_id=data.get("folder_id"),
            private=data["private"], use_memories=data["use_memories"],
        )
        return Response(conversation_repr(conversation), status=status.HTTP_201_CREATED)


class ConversationDetailView(APIView):
    @extend_schema(responses={200: ConversationSerializer, 404: ErrorSerializer})
    def get(self, request: Request, conversation_id: str) -> Response:
        return Response(conversation_repr(access_conversation(conversation_id)))

    @extend_schema(request=s.ConversationPatchSerializer, responses={200: ConversationSerializer, 404: ErrorSerializer})
    def patch(self, request: Request, conversation_id: str) -> Response:
        changes = s.validated(s.ConversationPatchSerializer, s.patch_fields(request, ("title", "folder_id", "unread")))
        return Response(conversation_repr(conversation_update(conversation_id=conversation_id, changes=changes)))

    @extend_schema(responses={200: dict, 404: ErrorSerializer, 409: ErrorSerializer})
    def delete(self, request: Request, conversation_id: str) -> Response:
        """Delete a trashed conversation forever; answers the receipt (counts only, no text)."""
        return Response(deletion_receipt(conversation_delete_forever(conversation_id=conversation_id)))


class DeletionReceiptView(APIView):
    @extend_schema(responses={200: dict, 404: ErrorSerializer})
    def get(self, request: Request, deletion_id: str) -> Response:
        return Response(deletion_receipt(access_deletion(deletion_id)))


class ConversationRewindView(APIView):
    @extend_schema(request=s.RewindSerializer, responses={200: ConversationSerializer, 404: ErrorSerializer})
    def post(self, request: Request, conversation_id: str) -> Response:
        data = s.validated(s.RewindSerializer, request.data)
        conversation = conversation_rewind(conversation_id=conversation_id, message_id=data["message_id"])
        return Response(conversation_repr(conversation))


class ConversationSwitchView(APIView):
    @extend_schema(
        request=s.SwitchSerializer,
        responses={200: ConversationSerializer, 400: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer},
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        """Show another version: the head moves to the newest end under `message_id`; nothing is deleted."""
        data = s.validated(s.SwitchSerializer, request.data)
        conversation = conversation_switch(conversation_id=conversation_id, message_id=data["message_id"])
        return Response(conversation_repr(conversation))


class ConversationForkView(APIView):
    @extend_schema(
        request=dict,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=True)],
        responses={201: ConversationSerializer, 200: ConversationSerializer, 400: ErrorSerializer,
                   404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        if not isinstance(request.data, dict):
            raise InvalidInput("The body must be a JSON object with message_id.", code="malformed_request")
        destination, created = conversation_fork(
            conversation_id=conversation_id,
            message_id=request.data.get("message_id"),
            idempotency_key=request.headers.get("Idempotency-Key"),
        )
        return Response(
            conversation_repr(destination), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class ConversationExportView(APIView):
    @extend_schema(responses={(200, 'text/markdown'): str, (200, 'application/json'): dict, 400: ErrorSerializer})
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
