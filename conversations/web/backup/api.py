"""`GET /api/backup/`: the full backup zip, streamed (owner only, like every `/api/` path); `/api/backups/`: the
backups that run themselves (list, back up now, verify again, download a stored, encrypted file).

Thin: what the zip holds and how it is written live in `operations.backup`.
Under ASGI (Daphne) the chunks are handed over as an asynchronous iterator,
each one made in this request's own thread, so Django never gathers the
whole zip in memory (it would, to serve a synchronous iterator).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from elion.base.api_errors import ErrorSerializer
from operations.backup.listing import backups_listing
from operations.backup.requests import backup_download, backup_now_request, backup_verify_request
from operations.backup.writing import backup_chunks

_DONE = object()


class _ChunksOverAsgi:
    """An asynchronous iterator over a synchronous one: every step (and the close) runs in the request's thread."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pull()

    async def _pull(self) -> AsyncIterator[bytes]:
        step = sync_to_async(next, thread_sensitive=True)
        while (chunk := await step(self._chunks, _DONE)) is not _DONE:
            yield chunk

    def close(self) -> None:
        # StreamingHttpResponse.close() calls this (in the request's thread): a cancelled download ends the read.
        self._chunks.close()


def backup_filename() -> str:
    """Marked unencrypted: the scheduled backups are the encrypted ones."""
    return f"elion-backup-{timezone.now():%Y%m%d-%H%M%S}-unencrypted.zip"


def _streamed(request: Request, chunks: Iterator[bytes]) -> object:
    return _ChunksOverAsgi(chunks) if isinstance(request._request, ASGIRequest) else chunks


class BackupView(APIView):
    @extend_schema(
        operation_id="backup_retrieve",
        responses={
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The backup zip (README, Backup and restore)."
            )
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        response = StreamingHttpResponse(_streamed(request, backup_chunks()), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{backup_filename()}"'
        response["Cache-Control"] = "no-store"
        return response


class BackupOutSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    created_at = serializers.DateTimeField()
    size = serializers.IntegerField(allow_null=True)
    encrypted = serializers.BooleanField()
    destination = serializers.CharField()
    status = serializers.ChoiceField(choices=["running", "verified", "failed"])
    verified_at = serializers.DateTimeField(allow_null=True)
    counts = serializers.DictField(allow_null=True)
    failure = serializers.CharField(allow_null=True)
    scheduled_for = serializers.DateTimeField(allow_null=True)


class BackupScheduleSerializer(serializers.Serializer):
    backup_schedule = serializers.ChoiceField(choices=["off", "daily", "weekly"])
    backup_hour = serializers.IntegerField()
    time_zone = serializers.CharField()
    backup_keep_daily = serializers.IntegerField()
    backup_keep_weekly = serializers.IntegerField()
    backup_keep_monthly = serializers.IntegerField()
    next_run = serializers.DateTimeField(allow_null=True)
    running = serializers.BooleanField()
    refused = serializers.CharField(allow_null=True)


class BackupListSerializer(serializers.Serializer):
    results = BackupOutSerializer(many=True)
    last_verified_at = serializers.DateTimeField(allow_null=True)
    schedule = BackupScheduleSerializer()


class BackupIdSerializer(serializers.Serializer):
    id = serializers.UUIDField()


class BackupsView(APIView):
    @extend_schema(operation_id="backups_list", responses=BackupListSerializer)
    def get(self, request: Request) -> Response:
        return Response(backups_listing())

    @extend_schema(
        operation_id="backups_create", request=None,
        responses={202: BackupIdSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        return Response({"id": str(backup_now_request().id)}, status=202)


class BackupVerifyView(APIView):
    @extend_schema(
        operation_id="backups_verify", request=None,
        responses={202: BackupIdSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, backup_id: str) -> Response:
        return Response({"id": str(backup_verify_request(backup_id).id)}, status=202)


class BackupDownloadView(APIView):
    @extend_schema(
        operation_id="backups_download",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(
                OpenApiTypes.BINARY, description="The stored backup file, age-encrypted."
            ),
            404: ErrorSerializer, 409: ErrorSerializer,
        },
    )
    def get(self, request: Request, backup_id: str) -> StreamingHttpResponse:
        name, chunks, size = backup_download(backup_id)
        response = StreamingHttpResponse(_streamed(request, chunks), content_type="application/octet-stream")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response["Cache-Control"] = "no-store"
        if size is not None:
            response["Content-Length"] = str(size)
        return response
