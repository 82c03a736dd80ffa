"""HTTP API for Branch / Fresh Chat (API.md "Conversation actions").

Thin: the view reads the `Idempotency-Key` header, calls the service and
answers the conversation (201 when created, 200 for a repeated key).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.branching import conversation_branch
from conversations import schema as docs
from conversations.serializers import conversation_repr


class ConversationBranchView(APIView):
    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=True)],
        responses={201: docs.ConversationSerializer, 200: docs.ConversationSerializer, 400: docs.ErrorSerializer,
                   404: docs.ErrorSerializer, 409: docs.ErrorSerializer},
    )
    def post(self, request, conversation_id):
        destination, created = conversation_branch(
            conversation_id=conversation_id, idempotency_key=request.headers.get("Idempotency-Key")
        )
        return Response(
            conversation_repr(destination), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )
