"""HTTP API for folders: `GET|POST /api/folders/`, `PATCH|DELETE /api/folders/{id}/` (docs/api.md).

Hiding a folder is a `PATCH` of `hidden`: the same service as the page's Hide / Show.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.services.threads.thread_writes import (
    folder_create,
    folder_delete,
    folder_update,
)
from conversations.web import schema as docs
from conversations.web import serializers as s
from elion.base.api_errors import ErrorSerializer
from transcript.models import Folder


class FolderListView(APIView):
    @extend_schema(responses=docs.FolderListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"results": [s.folder_repr(f) for f in Folder.objects.all()]})

    @extend_schema(request=s.FolderSerializer, responses={201: docs.FolderOutSerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        data = s.validated(s.FolderSerializer, request.data)
        folder = folder_create(name=data.get("name", ""), hidden=data.get("hidden", False))
        return Response(s.folder_repr(folder), status=status.HTTP_201_CREATED)


class FolderDetailView(APIView):
    @extend_schema(request=s.FolderSerializer, responses={200: docs.FolderOutSerializer, 404: ErrorSerializer})
    def patch(self, request: Request, folder_id: int) -> Response:
        changes = s.validated(s.FolderSerializer, s.patch_fields(request, ("name", "hidden")))
        return Response(s.folder_repr(folder_update(folder_id=folder_id, changes=changes)))

    @extend_schema(responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, folder_id: int) -> Response:
        folder_delete(folder_id=folder_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
