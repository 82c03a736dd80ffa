"""HTTP API and page actions for Compact / Undo (`continuity.rules.compaction`). Thin."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.rules.compaction import compaction_for_head, compaction_repr, conversation_compaction_undo
from continuity.services.compaction import conversation_compact
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import ServiceError
from transcript.access import access_conversation


class ConversationCompactionView(APIView):
    """`GET` the compaction the next request would use; `POST` compacts; `DELETE` undoes."""

    @extend_schema(responses={200: dict, 404: ErrorSerializer})
    def get(self, request: Request, conversation_id: str) -> Response:
        conversation = access_conversation(conversation_id)
        return Response({"compaction": compaction_repr(compaction_for_head(conversation))})

    @extend_schema(request=None, responses={201: dict, 404: ErrorSerializer, 409: ErrorSerializer})
    def post(self, request: Request, conversation_id: str) -> Response:
        compaction = conversation_compact(conversation_id=conversation_id)
        return Response({"compaction": compaction_repr(compaction)}, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: dict, 404: ErrorSerializer})
    def delete(self, request: Request, conversation_id: str) -> Response:
        return Response({"removed": conversation_compaction_undo(conversation_id=conversation_id)})


@require_POST
def compact_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    try:
        compaction = conversation_compact(conversation_id=conversation_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(
            request,
            f"Compacted: the next replies read a model-written summary of the first {compaction.covered_messages} "
            "turns instead of the turns themselves. Every message is kept; Undo brings the full history back.",
        )
    return redirect("chat", conversation_id=conversation_id)


@require_POST
def compaction_undo_page(request: HttpRequest, conversation_id: str) -> HttpResponse:
    try:
        conversation_compaction_undo(conversation_id=conversation_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Compaction undone: the next reply reads the full history again.")
    return redirect("chat", conversation_id=conversation_id)
