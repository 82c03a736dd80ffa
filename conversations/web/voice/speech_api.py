"""HTTP API for Read aloud (docs/api.md "Voice"): a reply's speech, its segments, and voice previews.

- `GET /api/conversations/{id}/messages/{message_id}/speech/`: the whole reply as one WAV, with an `ETag`;
  `?segment=N` one segment of it (what the page plays, one after another, so playback starts after the
  first sentence is made); `…/speech/segments/` lists the segments (no provider request).
- `GET /api/voices/`: the voices the installed SDK lists; `GET /api/voices/{voice}/preview/`: a sample.

A stored segment is served from its blob with no provider request. Thin: `conversations.services.voice.speech`.
The two JSON routes are DRF views; the two that may call the provider stay async (why, and how they are
documented: `conversations.web.voice.schema`).
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.services.voice.speech import (
    SpeechPlan,
    SpokenSegment,
    speech_plan,
    speech_segment,
    speech_whole,
    voice_preview,
)
from conversations.web.messages.api import error_response
from conversations.web.voice import schema as voice_docs
from elion.base.api_errors import ErrorSerializer
from elion.base.assistant_settings import assistant_settings_read
from elion.base.errors import ServiceError
from transcript.provider.audio import sdk_voices


def _audio_response(request: HttpRequest, spoken: SpokenSegment) -> HttpResponse:
    etag = f'"{spoken.sha256}"'
    if request.headers.get("If-None-Match") == etag:
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(spoken.audio, content_type=spoken.mime)
        response["Content-Disposition"] = "inline"
    response["ETag"] = etag
    response["Cache-Control"] = "private, max-age=86400"
    response["X-Content-Type-Options"] = "nosniff"
    response["X-Elion-Demo"] = "true" if spoken.demo else "false"
    return response


async def _plan(conversation_id: str, message_id: str, request: HttpRequest, *, while_streaming: bool) -> SpeechPlan:
    return await sync_to_async(speech_plan)(
        conversation_id=conversation_id, message_id=message_id, voice=request.GET.get("voice") or None,
        while_streaming=while_streaming,
    )


@method_decorator(csrf_exempt, name="dispatch")  # GET only: a write is a 405
class MessageSpeechView(View):
    async def get(self, request: HttpRequest, conversation_id: str, message_id: str) -> HttpResponse:
        try:
            segment = request.GET.get("segment")
            # One segment may be asked for while the reply streams (Talk); the whole reply once it settled.
            plan = await _plan(conversation_id, message_id, request, while_streaming=segment is not None)
            spoken = await (speech_whole(plan) if segment is None else speech_segment(plan, segment))
        except ServiceError as exc:
            return error_response(exc)
        return _audio_response(request, spoken)


class MessageSpeechSegmentsView(APIView):
    @extend_schema(
        operation_id="conversations_messages_speech_segments",
        description="The reply's text prepared for speech, cut into segments (no provider request). While the "
        "reply streams: the segments its text has finished so far (`complete` false), the settled reply's first ones.",
        parameters=[voice_docs.SpeechQuerySerializer],
        responses={200: voice_docs.SpeechSegmentsSerializer, 400: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer},
    )
    def get(self, request: Request, conversation_id: str, message_id: str) -> Response:
        plan = speech_plan(
            conversation_id=conversation_id, message_id=message_id, voice=request.query_params.get("voice") or None,
            while_streaming=True,
        )
        base = f"/api/conversations/{plan.conversation_id}/messages/{plan.message_id}/speech/"
        return Response({
            "voice": plan.voice,
            "model": plan.model,
            "complete": plan.complete,
            "segments": [
                {"index": i, "characters": len(text), "url": f"{base}?segment={i}"}
                for i, text in enumerate(plan.segments)
            ],
        })


class VoicesView(APIView):
    @extend_schema(operation_id="voices_list", responses={200: voice_docs.VoiceListSerializer})
    def get(self, request: Request) -> Response:
        row = assistant_settings_read()
        return Response({"voices": list(sdk_voices()), "voice": row.voice, "model": settings.ELION_SPEECH_MODEL})


@method_decorator(csrf_exempt, name="dispatch")
class VoicePreviewView(View):
    async def get(self, request: HttpRequest, voice: str) -> HttpResponse:
        try:
            spoken = await voice_preview(voice)
        except ServiceError as exc:
            return error_response(exc)
        return _audio_response(request, spoken)
