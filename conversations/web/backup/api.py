"""`GET /api/backup/`: the full backup zip, streamed (owner only, like every `/api/` path).

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
from rest_framework.request import Request
from rest_framework.views import APIView

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
    return f"elion-backup-{timezone.now():%Y%m%d-%H%M%S}.zip"


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
        chunks = backup_chunks()
        content = _ChunksOverAsgi(chunks) if isinstance(request._request, ASGIRequest) else chunks
        response = StreamingHttpResponse(content, content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{backup_filename()}"'
        response["Cache-Control"] = "no-store"
        return response
