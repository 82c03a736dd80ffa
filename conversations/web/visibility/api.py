"""HTTP API for visibility transitions and Past Conversation Search (docs/api.md).

Folder hide/unhide and moves go through `PATCH /api/folders/{id}/` and
`PATCH /api/conversations/{id}/` (`conversations.web.folders.api`,
`conversations.web.threads.api`), which call the same services. Thin views: a request becomes a service call, the result a response.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.web.conversation_shape import ConversationSerializer, conversation_repr
from conversations.services.visibility import transitions as visibility
from conversations.services.visibility.past_search import past_conversation_search
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput
from elion.base.fulltext import query_terms

QUERY_MAX = 500
_TRUE = ("1", "true", "on", "yes")
_FALSE = ("", "0", "false", "off", "no")


class SearchHitSerializer(serializers.Serializer):
    conversation_id = serializers.UUIDField()
    conversation_title = serializers.CharField()
    message_id = serializers.UUIDField()
    role = serializers.ChoiceField(choices=["user", "assistant"])
    excerpt = serializers.CharField()
    shielded = serializers.BooleanField()
    private = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class SearchResultsSerializer(serializers.Serializer):
    results = SearchHitSerializer(many=True)


def flag(value: str | None, name: str) -> bool:
    text = (value or "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InvalidInput(f"{name} must be true or false.", code=f"invalid_{name}")


def search_query(value: str | None) -> str:
    query = (value or "").strip()
    if len(query) > QUERY_MAX:
        raise InvalidInput(f"A search can be at most {QUERY_MAX} characters.", code="query_too_long")
    if not query_terms(query):
        raise InvalidInput("Type at least one word to search for.", code="query_required")
    return query


_CONVERSATION_RESPONSES = {200: ConversationSerializer, 404: ErrorSerializer, 409: ErrorSerializer}


class ConversationTrashView(APIView):
    @extend_schema(request=None, responses=_CONVERSATION_RESPONSES)
    def post(self, request: Request, conversation_id: str) -> Response:
        return Response(conversation_repr(visibility.conversation_trash(conversation_id=conversation_id)))


class ConversationRestoreView(APIView):
    @extend_schema(request=None, responses=_CONVERSATION_RESPONSES)
    def post(self, request: Request, conversation_id: str) -> Response:
        return Response(conversation_repr(visibility.conversation_restore(conversation_id=conversation_id)))


class ConversationKeepView(APIView):
    @extend_schema(request=None, responses=_CONVERSATION_RESPONSES)
    def post(self, request: Request, conversation_id: str) -> Response:
        return Response(conversation_repr(visibility.conversation_keep(conversation_id=conversation_id)))


class ConversationReleaseShieldView(APIView):
    @extend_schema(request=None, responses=_CONVERSATION_RESPONSES)
    def post(self, request: Request, conversation_id: str) -> Response:
        return Response(conversation_repr(visibility.conversation_shield_release(conversation_id=conversation_id)))


class PastConversationSearchView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("q", str, required=True),
            OpenApiParameter("include_shielded", bool, required=False, default=False),
            OpenApiParameter("include_private", bool, required=False, default=False),
        ],
        responses={200: SearchResultsSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        query = search_query(request.query_params.get("q"))
        include_shielded = flag(request.query_params.get("include_shielded"), "include_shielded")
        include_private = flag(request.query_params.get("include_private"), "include_private")
        hits = past_conversation_search(query, include_shielded=include_shielded, include_private=include_private)
        return Response({"results": [hit.as_dict() for hit in hits]})
