"""HTTP API for voice (docs/api.md "Voice"): `POST /api/transcriptions/`.

Thin: the checks and the provider call are `conversations.services.voice`. A transcription answers
JSON, or with `Accept: text/event-stream` the words as they come (`delta` events, then `done`). A
refusal, and a provider failure before the first word, is a JSON error with its status either way.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt

from conversations.services.voice.transcription import (
    PreparedTranscription,
    recording_too_large,
    transcription_events,
    transcription_prepare,
)
from conversations.web.messages.api import csrf_checked, error_response, sse_response
from elion.base.errors import InvalidInput, ServiceError
from elion.base.request_bounds import MULTIPART_OVERHEAD


def _prepare(request: HttpRequest) -> PreparedTranscription:
    csrf_checked(request)
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > settings.ELION_VOICE_MAX_BYTES + MULTIPART_OVERHEAD:
        raise recording_too_large()  # before Django reads (and spools) the body
    if not (request.content_type or "").startswith("multipart/form-data"):
        raise InvalidInput("Send the recording as a multipart form with field `file`.", code="file_required")
    files = request.FILES.getlist("file")
    if len(files) > 1:
        raise InvalidInput("Send one recording per request.", code="one_file_per_upload")
    return transcription_prepare(
        upload=files[0] if files else None,
        conversation_id=request.POST.get("conversation_id"),
        language=request.POST.get("language"),
        duration_seconds=request.POST.get("duration_seconds"),
    )


@method_decorator(csrf_exempt, name="dispatch")  # checked in `_prepare`, as the send does
class TranscriptionView(View):
    async def post(self, request: HttpRequest) -> HttpResponse:
        try:
            prepared = await sync_to_async(_prepare)(request)
        except ServiceError as exc:
            return error_response(exc)
        events = transcription_events(prepared)
        # The first event decides the status: a provider failure before any word is a 502, not a stream.
        first = await anext(events)
        if first[0] == "error":
            return JsonResponse(first[1], status=502)
        if "text/event-stream" in request.headers.get("Accept", ""):
            async def rest():  # noqa: ANN202 - an async generator of (name, data)
                yield first
                async for event in events:
                    yield event

            return sse_response(rest())
        name, data = first
        async for name, data in events:  # noqa: B007 - only the last event (done or error) is answered
            pass
        if name == "error":
            return JsonResponse(data, status=502)
        return JsonResponse(data, status=200)
