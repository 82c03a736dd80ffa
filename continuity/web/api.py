"""HTTP API for Branch / Fresh Chat (docs/api.md "Conversations") and Continuity Cleanup ("Backup and maintenance").

Thin: the branch view reads the `Idempotency-Key` header, calls the service
and answers the conversation (201 when created, 200 for a repeated key); the
cleanup view passes the body to `continuity.services.cleanup` and answers its counts.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.services.branching import conversation_branch
from continuity.services.cleanup import cleanup_available, continuity_cleanup_delete, continuity_cleanup_preview
from continuity.web.conversation_shape import ConversationSerializer, conversation_repr
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput


class ConversationBranchView(APIView):
    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=True)],
        responses={201: ConversationSerializer, 200: ConversationSerializer, 400: ErrorSerializer,
                   404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, conversation_id: str) -> Response:
        destination, created = conversation_branch(
            conversation_id=conversation_id, idempotency_key=request.headers.get("Idempotency-Key")
        )
        return Response(
            conversation_repr(destination), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class CleanupPreviewSerializer(serializers.Serializer):
    eligible_count = serializers.IntegerField()
    protected_handoff_count = serializers.IntegerField()
    oldest = serializers.DateTimeField(allow_null=True)
    newest = serializers.DateTimeField(allow_null=True)
    scope_token = serializers.CharField()


class CleanupDeleteSerializer(serializers.Serializer):
    scope_token = serializers.CharField()
    backup_verified = serializers.BooleanField()
    confirmation = serializers.CharField()


class CleanupReceiptSerializer(serializers.Serializer):
    removed = serializers.IntegerField()


class ContinuityCleanupView(APIView):
    """Continuity Cleanup (docs/api.md "Backup and maintenance"): counts-only preview, guarded deletion.

    The service decides everything, including the 403 when owner password
    protection is not configured; the view only moves JSON.
    """

    @extend_schema(responses={200: CleanupPreviewSerializer, 403: ErrorSerializer})
    def get(self, request: Request) -> Response:
        return Response(continuity_cleanup_preview().as_dict())

    @extend_schema(
        request=CleanupDeleteSerializer,
        responses={200: CleanupReceiptSerializer, 400: ErrorSerializer, 403: ErrorSerializer,
                   409: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        cleanup_available()
        if not isinstance(request.data, dict):
            raise InvalidInput("The body must be a JSON object.", code="malformed_request")
        removed = continuity_cleanup_delete(
            scope_token=request.data.get("scope_token"),
            backup_verified=request.data.get("backup_verified"),
            confirmation=request.data.get("confirmation"),
        )
        return Response({"removed": removed})
