"""The voice routes in the published schema (`/api/schema/`, docs/api.md "Voice").

`GET /api/voices/` and `…/speech/segments/` are DRF views (no provider request) and documented by their
serializers here. The three routes that call the provider stay async Django views, as the send does: a
DRF view is sync, and under ASGI every sync view shares one thread, so a transcription or a piece of
speech (seconds of provider time) would hold up every other API request meanwhile. drf-spectacular
cannot see them, so `add_voice_endpoints`, a postprocessing hook, writes their operations by hand:
the multipart recording, the JSON or `text/event-stream` answer, the audio bytes, every status.
"""

from __future__ import annotations

from rest_framework import serializers

from transcript.provider.audio import sdk_voices

_ERROR = {"$ref": "#/components/schemas/Error"}
_AUDIO = {"type": "string", "format": "binary"}


class VoiceListSerializer(serializers.Serializer):
    voices = serializers.ListField(child=serializers.CharField(), help_text="The installed SDK's built-in voices.")
    voice = serializers.CharField(help_text="The owner's voice (Settings).")
    model = serializers.CharField(help_text="`ELION_SPEECH_MODEL`.")


class SpeechSegmentSerializer(serializers.Serializer):
    index = serializers.IntegerField(min_value=0)
    characters = serializers.IntegerField(min_value=1, help_text="Of the text prepared for speech.")
    url = serializers.CharField(help_text="`…/speech/?segment={index}`: this segment's audio.")


class SpeechSegmentsSerializer(serializers.Serializer):
    voice = serializers.CharField()
    model = serializers.CharField()
    complete = serializers.BooleanField(help_text="False while the reply streams: more segments may follow.")
    segments = SpeechSegmentSerializer(many=True)


class SpeechQuerySerializer(serializers.Serializer):
    """Documents the query; `conversations.services.voice.speech` checks it (400 `invalid_voice`)."""

    voice = serializers.CharField(required=False, help_text="One of `GET /api/voices/`; default: the owner's.")


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict:
    return _json(_ERROR, description)


def _path(name: str) -> dict:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _audio_answer(description: str) -> dict:
    """The audio bytes with their `ETag`, and the 304 a matching `If-None-Match` gets."""
    headers = {
        "ETag": {"schema": {"type": "string"}, "description": "The sha256 of the audio, quoted."},
        "X-Elion-Demo": {"schema": {"type": "string", "enum": ["true", "false"]},
                         "description": "true: the offline demo's speech (no API key)."},
    }
    return {
        "200": {"description": description, "headers": headers,
                "content": {mime: {"schema": _AUDIO} for mime in ("audio/wav", "audio/mpeg", "audio/ogg")}},
        "304": {"description": "Not modified: `If-None-Match` named this audio's ETag", "headers": headers},
    }


_IF_NONE_MATCH = {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"}}


def _transcription() -> dict:
    form = {
        "type": "object",
        "properties": {
            "file": {**_AUDIO, "description": "One recording: WebM, Ogg, WAV, FLAC, MP3 or M4A audio "
                     "(recognised by its bytes), at most 25 MiB and 10 minutes."},
            "conversation_id": {"type": "string", "format": "uuid",
                                "description": "Transcribe on this conversation's provider binding."},
            "language": {"type": "string", "pattern": "^[a-z]{2,3}$",
                         "description": "ISO-639-1; default: the owner's voice_language, else detected."},
            "duration_seconds": {"type": "number", "minimum": 0,
                                 "description": "The recording's length, for containers without one (WebM)."},
        },
        "required": ["file"],
    }
    done = {
        "type": "object",
        "properties": {
            "text": {"type": "string"},
            "model": {"type": "string", "description": "The transcription model, or `offline-demo`."},
            "duration_seconds": {"type": "number", "nullable": True},
            "demo": {"type": "boolean"},
            "attachment": {"type": "object", "nullable": True,
                           "description": "The kept recording (\"Keep voice recordings\" on), an upload the "
                           "send commits like any other"},
        },
        "required": ["text", "model", "duration_seconds", "demo", "attachment"],
    }
    return {
        "post": {
            "operationId": "transcriptions_create",
            "description": "Transcribe one recording; nothing is sent or stored as a turn. With "
            "`Accept: text/event-stream` the words stream as `delta` {text} events, then one `done` "
            "(the JSON answer) or `error` {error, detail}.",
            "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": form}}},
            "responses": {
                "200": {"description": "The words (JSON), or their stream",
                        "content": {"application/json": {"schema": done},
                                    "text/event-stream": {"schema": {"type": "string"}}}},
                "400": _error("file_required, one_file_per_upload, empty_audio, unsupported_audio, "
                              "invalid_language, invalid_duration"),
                "403": _error("csrf_failed (a session write without its CSRF token)"),
                "404": _error("Unknown conversation_id"),
                "409": _error("The conversation's provider binding does not match the configured provider"),
                "413": _error("audio_too_large, audio_too_long"),
                "502": _error("provider_error: the provider failed before the first word"),
            },
        }
    }


def _message_speech() -> dict:
    segment = {"name": "segment", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0},
               "description": "One segment (see …/speech/segments/); without it the whole reply as one WAV."}
    voice = {"name": "voice", "in": "query", "required": False, "schema": {"type": "string"},
             "description": "One of GET /api/voices/; default: the owner's."}
    return {
        "get": {
            "operationId": "conversations_messages_speech",
            "description": "A reply's speech: made once per segment (with the voice, model and "
            "instructions) and kept; a replay is served from the stored audio with no provider request.",
            "parameters": [_path("conversation_id"), _path("message_id"), segment, voice, _IF_NONE_MATCH],
            "responses": {
                **_audio_answer("The reply's audio (or one segment of it)"),
                "400": _error("invalid_voice"),
                "404": _error("Unknown conversation or message, or speech_segment_not_found"),
                "409": _error("speech_unavailable (not a reply, no text, or the whole reply asked for while it "
                              "streams), or the provider binding does not match"),
                "502": _error("provider_error"),
            },
        }
    }


def _voice_preview() -> dict:
    voice = {"name": "voice", "in": "path", "required": True, "schema": {"type": "string", "enum": list(sdk_voices())}}
    return {
        "get": {
            "operationId": "voices_preview",
            "description": "A short sample in this voice with the owner's instructions (kept once made).",
            "parameters": [voice, _IF_NONE_MATCH],
            "responses": {
                **_audio_answer("The sample"),
                "400": _error("invalid_voice"),
                "502": _error("provider_error"),
            },
        }
    }


def add_voice_endpoints(result: dict, generator: object, request: object, public: bool) -> dict:
    """A postprocessing hook: the provider-calling voice routes (module docstring)."""
    paths = result.setdefault("paths", {})
    paths["/api/transcriptions/"] = _transcription()
    paths["/api/conversations/{conversation_id}/messages/{message_id}/speech/"] = _message_speech()
    paths["/api/voices/{voice}/preview/"] = _voice_preview()
    return result
