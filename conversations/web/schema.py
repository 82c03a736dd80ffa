"""OpenAPI documentation pieces: response shapes, and the streaming endpoints.

The send and retry endpoints are async Django views (they stream), which
drf-spectacular cannot see, so a postprocessing hook adds them by hand.
"""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework import serializers

from continuity.web.conversation_shape import ConversationSerializer
from conversations.web.message_paging import PAGE_LIMIT_MAX


class AttachmentUploadSerializer(serializers.Serializer):
    """`POST /api/attachments/`, a multipart form."""

    file = serializers.FileField(help_text="One image (PNG, JPEG, GIF, WebP), PDF or UTF-8 text file.")
    conversation_id = serializers.UUIDField(required=False, help_text="Only this conversation may send it.")


class AttachmentSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    sha256 = serializers.CharField()
    name = serializers.CharField()
    mime = serializers.CharField()
    size = serializers.IntegerField()
    generated = serializers.BooleanField(help_text="An image a reply made; false for every upload.")


class ConversationListSerializer(serializers.Serializer):
    results = ConversationSerializer(many=True)


class CitationSerializer(serializers.Serializer):
    url = serializers.URLField()
    title = serializers.CharField(allow_blank=True)
    start = serializers.IntegerField()
    end = serializers.IntegerField()


class SiblingsSerializer(serializers.Serializer):
    index = serializers.IntegerField(min_value=1)
    count = serializers.IntegerField(min_value=1)
    ids = serializers.ListField(child=serializers.UUIDField())


class MessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    parent_id = serializers.UUIDField(allow_null=True)
    role = serializers.CharField()
    kind = serializers.CharField()
    content = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=["complete", "streaming", "interrupted", "failed", "incomplete"])
    attachments = serializers.ListField(child=serializers.DictField())
    citations = CitationSerializer(many=True)
    metadata = serializers.DictField()
    created_at = serializers.DateTimeField()
    read_aloud_at = serializers.DateTimeField(
        allow_null=True, help_text="A reply's first speech made (Talk, automatic or the speaker): its voice mark.")
    siblings = SiblingsSerializer()


class MessageListSerializer(serializers.Serializer):
    results = MessageSerializer(many=True)


class SettingsSerializer(serializers.Serializer):
    custom_instructions = serializers.CharField(allow_blank=True)
    personality = serializers.CharField()
    display_name = serializers.CharField()
    owner_name = serializers.CharField()
    archive_access = serializers.BooleanField()
    web_search = serializers.BooleanField()
    provider_store_responses = serializers.BooleanField()
    reasoning_effort = serializers.ChoiceField(choices=["minimal", "low", "medium", "high"])
    verbosity = serializers.ChoiceField(choices=["low", "medium", "high"])
    reasoning_summary_shown = serializers.BooleanField()
    image_generation = serializers.BooleanField()
    memory_suggestions = serializers.BooleanField()
    time_zone = serializers.CharField(help_text="IANA time zone name; a new check-in's zone")
    check_in_proposals = serializers.BooleanField()
    voice = serializers.CharField()
    voice_instructions = serializers.CharField(allow_blank=True)
    voice_language = serializers.CharField(allow_blank=True)
    read_aloud_auto = serializers.BooleanField()
    keep_voice_recordings = serializers.BooleanField()
    push_shows_text = serializers.BooleanField()
    backup_schedule = serializers.ChoiceField(choices=["off", "daily", "weekly"])
    backup_hour = serializers.IntegerField(min_value=0, max_value=23)
    backup_keep_daily = serializers.IntegerField(min_value=0)
    backup_keep_weekly = serializers.IntegerField(min_value=0)
    backup_keep_monthly = serializers.IntegerField(min_value=0)


class FolderOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    hidden = serializers.BooleanField()


class FolderListSerializer(serializers.Serializer):
    results = FolderOutSerializer(many=True)


_ERROR = {"$ref": "#/components/schemas/Error"}


def _json(schema: dict) -> dict:
    return {"content": {"application/json": {"schema": schema}}}


def add_streaming_endpoints(result: dict, generator: object, request: HttpRequest | None, public: bool) -> dict:
    """Document the SSE send and retry endpoints that drf-spectacular cannot see."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("Error", {
        "type": "object", "properties": {"error": {"type": "string"}, "detail": {"type": "string"}},
        "required": ["error", "detail"],
    })
    stream_responses = {
        "200": {
            "description": "text/event-stream of user_message, assistant_message, diagnostics, delta, tool, image, "
            "error and done events; with ?stream=false one JSON object",
            "content": {"text/event-stream": {"schema": {"type": "string"}}, "application/json": {"schema": {"type": "object"}}},
        },
        "400": {"description": "Bad input", **_json(_ERROR)},
        "404": {"description": "Unknown conversation or message", **_json(_ERROR)},
        "409": {"description": "Reply in progress, trashed conversation or provider mismatch", **_json(_ERROR)},
    }
    stream_param = {"name": "stream", "in": "query", "required": False, "schema": {"type": "string", "enum": ["true", "false"]}}
    conversation_param = {"name": "conversation_id", "in": "path", "required": True, "schema": {"type": "string"}}
    message_param = {"name": "message_id", "in": "path", "required": True, "schema": {"type": "string"}}
    send_body = {
        "type": "object",
        "properties": {
            "content": {"type": "string"},
            "client_message_id": {"type": "string", "format": "uuid"},
            "parent_id": {"type": "string", "format": "uuid", "nullable": True},
            "pinned_character_id": {"type": "integer", "nullable": True},
            "attachment_ids": {"type": "array", "items": {"type": "string"}},
            "voice": {"type": "boolean", "default": False,
                      "description": "Spoken (Talk or dictation): stored as the user turn's metadata.voice"},
        },
        "required": ["content"],
    }
    # The messages list is routed through the async `SendView`, so drf-spectacular never
    # sees `MessageSerializer`: its component is written here.
    components.setdefault("Message", {
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "parent_id": {"type": "string", "format": "uuid", "nullable": True},
            "role": {"type": "string"},
            "kind": {"type": "string"},
            "content": {"type": "string"},
            "status": {"type": "string", "enum": ["complete", "streaming", "interrupted", "failed", "incomplete"]},
            "attachments": {"type": "array", "items": {"type": "object"}},
            "metadata": {"type": "object"},
            "created_at": {"type": "string", "format": "date-time"},
            "read_aloud_at": {"type": "string", "format": "date-time", "nullable": True,
                              "description": "A reply's first speech made (Talk, automatic or the speaker "
                              "button): its voice mark; null when never read aloud"},
            "siblings": {
                "type": "object",
                "description": "The message's place among its parent's children (the roots, for a first turn), "
                "oldest first: index is 1-based",
                "properties": {
                    "index": {"type": "integer", "minimum": 1},
                    "count": {"type": "integer", "minimum": 1},
                    "ids": {"type": "array", "items": {"type": "string", "format": "uuid"}},
                },
                "required": ["index", "count", "ids"],
            },
        },
        "required": ["id", "parent_id", "role", "kind", "content", "status", "attachments", "metadata", "created_at",
                     "read_aloud_at", "siblings"],
    })
    components.setdefault("MessagePage", {
        "type": "object",
        "properties": {
            "results": {"type": "array", "items": {"$ref": "#/components/schemas/Message"}},
            "has_more_before": {"type": "boolean", "description": "Only with limit"},
            "has_more_after": {"type": "boolean", "description": "Only with limit"},
        },
        "required": ["results"],
    })
    paths = result.setdefault("paths", {})
    paths["/api/conversations/{conversation_id}/messages/"] = {
        "get": {
            "operationId": "conversations_messages_list",
            "parameters": [conversation_param, *_page_params()],
            "responses": {
                "200": {"description": "The live branch (without limit), or a window of it oldest to newest "
                        "with has_more_before / has_more_after (with limit)",
                        **_json({"$ref": "#/components/schemas/MessagePage"})},
                "400": {"description": "invalid_limit, invalid_cursor", **_json(_ERROR)},
                "404": {"description": "Unknown conversation, or a cursor not on its live branch", **_json(_ERROR)},
            },
        },
        "post": {
            "operationId": "conversations_messages_send",
            "parameters": [conversation_param, stream_param],
            "requestBody": {"required": True, **_json(send_body)},
            "responses": stream_responses,
        },
    }
    paths["/api/conversations/{conversation_id}/messages/{message_id}/retry/"] = {
        "post": {
            "operationId": "conversations_messages_retry",
            "parameters": [conversation_param, message_param, stream_param],
            "responses": stream_responses,
        }
    }
    _add_watch_and_stop(paths, conversation_param, message_param)
    return result


def _page_params() -> list[dict]:
    """`limit` with `before` or `around` (`conversations.web.message_paging`)."""
    cursor = {"type": "string", "format": "uuid"}
    return [
        {"name": "limit", "in": "query", "required": False,
         "schema": {"type": "integer", "minimum": 1, "maximum": PAGE_LIMIT_MAX},
         "description": "Page size; without it (and without a cursor) the whole live branch. Required with a cursor."},
        {"name": "before", "in": "query", "required": False, "schema": cursor,
         "description": "The limit live-branch messages just before this message (not with around)."},
        {"name": "around", "in": "query", "required": False, "schema": cursor,
         "description": "A window centred on this message: it, (limit - 1) // 2 after, the rest before; "
         "clamped at the root and the head (not with before)."},
    ]


def _add_watch_and_stop(paths: dict, conversation_param: dict, message_param: dict) -> None:
    """Resumable streams and Stop (`reply_watch`, `reply_stop`)."""
    last_event_id = {
        "name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "integer", "minimum": 0},
        "description": "Characters of the reply the client already has: the `seq` (SSE `id`) of its last delta.",
    }
    after_seq = {"name": "after_seq", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0},
                 "description": "Same as Last-Event-ID, for clients that cannot set the header."}
    watch_ok = {
        "description": "text/event-stream: user_message, assistant_message, diagnostics, then the stored text "
        "after Last-Event-ID as one delta, then live delta/tool/error events to done",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
    paths["/api/conversations/{conversation_id}/messages/{message_id}/stream/"] = {
        "get": {
            "operationId": "conversations_messages_stream",
            "parameters": [conversation_param, message_param, last_event_id, after_seq],
            "responses": {
                "200": watch_ok,
                "400": {"description": "Not an assistant reply, or a bad Last-Event-ID", **_json(_ERROR)},
                "404": {"description": "Unknown conversation or message", **_json(_ERROR)},
            },
        }
    }
    paths["/api/conversations/{conversation_id}/stream/"] = {
        "get": {
            "operationId": "conversations_live_stream",
            "parameters": [conversation_param, last_event_id, after_seq],
            "responses": {
                "200": watch_ok,
                "204": {"description": "No reply is streaming in this conversation"},
                "404": {"description": "Unknown conversation", **_json(_ERROR)},
            },
        }
    }
    paths["/api/conversations/{conversation_id}/messages/{message_id}/stop/"] = {
        "post": {
            "operationId": "conversations_messages_stop",
            "parameters": [conversation_param, message_param],
            "responses": {
                "200": {"description": "The reply, stored as interrupted (also when it was stopped before)",
                        **_json({"type": "object"})},
                "202": {"description": "Stop recorded; the reply's process has not confirmed yet (still streaming)",
                        **_json({"type": "object"})},
                "400": {"description": "Not an assistant reply", **_json(_ERROR)},
                "404": {"description": "Unknown conversation or message", **_json(_ERROR)},
                "409": {"description": "reply_not_streaming: the reply already ended", **_json(_ERROR)},
            },
        }
    }
