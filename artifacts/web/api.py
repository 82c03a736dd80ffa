"""HTTP API for artifacts (README "changelog of the HTTP contract").

`GET /api/artifacts/` (`?q=` search), `GET|DELETE /api/artifacts/{id}/`.
Thin: the rules live in `artifacts.services`. Artifacts are written only by
the model's tools, so there is no POST or PATCH.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from artifacts import services
from elion.base.api_errors import ErrorSerializer


class ArtifactSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    kind = serializers.CharField()
    conversation_id = serializers.UUIDField()
    message_id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    versions = serializers.IntegerField()


class ArtifactListSerializer(serializers.Serializer):
    results = ArtifactSerializer(many=True)


class ArtifactVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    content = serializers.CharField()
    conversation_id = serializers.UUIDField()
    message_id = serializers.UUIDField()
    tool_call_id = serializers.CharField()
    created_at = serializers.DateTimeField()


class ArtifactDetailSerializer(ArtifactSerializer):
    content = serializers.CharField()
    history = ArtifactVersionSerializer(many=True)


class ArtifactListView(APIView):
    @extend_schema(
        operation_id="artifacts_list",
        parameters=[OpenApiParameter("q", str, description="Words every listed artifact's title or text holds.")],
        responses={200: ArtifactListSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        rows = services.artifacts_list(request.query_params.get("q", ""))
        return Response({"results": [services.artifact_repr(a) for a in rows]})


class ArtifactDetailView(APIView):
    @extend_schema(responses={200: ArtifactDetailSerializer, 404: ErrorSerializer})
    def get(self, request: Request, artifact_id: str) -> Response:
        return Response(services.artifact_detail_repr(services.access_artifact(artifact_id)))

    @extend_schema(responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, artifact_id: str) -> Response:
        services.artifact_delete(artifact_id=artifact_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
