"""Representations for the API (docs/api.md) and the checks of its input. Shape only; rules live in services."""

from __future__ import annotations

from collections.abc import Iterable

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request

from conversations.services.message_selectors import MessagePage, MessageShown
from elion.base.errors import InvalidInput
from elion.models import AssistantSettings
from transcript.attachments.manifests import attachment_repr, manifests_for
from transcript.citations import message_citations
from transcript.models import Folder, Message
from transcript.siblings import Siblings, siblings_for


def message_repr(message: Message, attachments: list | None = None, siblings: Siblings | None = None) -> dict:
    """`attachments` and `siblings`: the message's manifest and versions when the caller loaded them
    for many messages at once (otherwise a statement each)."""
    if attachments is None:
        attachments = manifests_for([message]).get(message.id, [])
    if siblings is None:
        siblings = siblings_for(message.conversation_id, [message])[message.id]
    metadata = dict(message.metadata or {})
    if message.error:
        metadata["error"] = {"error": message.error, "detail": message.error_detail}
    return {
        "id": str(message.id),
        "parent_id": str(message.parent_id) if message.parent_id else None,
        "role": message.role,
        "kind": message.kind,
        "content": message.content,
        "status": message.status,
        "attachments": [attachment_repr(attachment) for attachment in attachments],
        "citations": message_citations(message.metadata),
        "metadata": metadata,
        "created_at": message.created_at.isoformat(),
        "read_aloud_at": message.read_aloud_at.isoformat() if message.read_aloud_at else None,
        "siblings": siblings.as_dict(),
    }


def messages_repr(shown: Iterable[MessageShown]) -> list[dict]:
    """Messages read with their manifests and versions (`message_selectors.messages_shown`)."""
    return [message_repr(item.message, item.attachments, item.siblings) for item in shown]


def message_page_repr(page: MessagePage) -> dict:
    """A page of the messages API: `{"results", "has_more_before", "has_more_after"}`."""
    return {
        "results": messages_repr(page.messages),
        "has_more_before": page.has_more_before,
        "has_more_after": page.has_more_after,
    }


def settings_repr(row: AssistantSettings) -> dict:
    return {
        "custom_instructions": row.custom_instructions,
        "personality": row.personality,
        "display_name": row.display_name,
        "owner_name": row.owner_name,
        "archive_access": row.archive_access,
        "web_search": row.web_search,
        "provider_store_responses": row.provider_store_responses,
        "reasoning_effort": row.reasoning_effort,
        "verbosity": row.verbosity,
        "reasoning_summary_shown": row.reasoning_summary_shown,
        "image_generation": row.image_generation,
        "memory_suggestions": row.memory_suggestions,
        # Check-ins (issue 44): the owner's IANA time zone, and "Elion may propose check-ins".
        "time_zone": row.time_zone,
        "check_in_proposals": row.check_in_proposals,
        "voice": row.voice,
        "voice_instructions": row.voice_instructions,
        "voice_language": row.voice_language,
        "read_aloud_auto": row.read_aloud_auto,
        "keep_voice_recordings": row.keep_voice_recordings,
        "push_shows_text": row.push_shows_text,
        # Backups that run themselves (issue 42; `operations.backup.scheduling` checks and saves them).
        "backup_schedule": row.backup_schedule,
        "backup_hour": row.backup_hour,
        "backup_keep_daily": row.backup_keep_daily,
        "backup_keep_weekly": row.backup_keep_weekly,
        "backup_keep_monthly": row.backup_keep_monthly,
    }


def folder_repr(folder: Folder) -> dict:
    return {"id": folder.id, "name": folder.name, "hidden": folder.hidden}


@extend_schema_field(OpenApiTypes.BOOL)
class StrictFlagField(serializers.JSONField):
    """A switch the service checks itself (`settings_writes.STRICT_FLAGS`); documented as a boolean."""


@extend_schema_field(OpenApiTypes.INT)
class CheckedNumberField(serializers.JSONField):
    """A whole number the service checks itself (range and type, 400 with the setting's code); documented so."""


@extend_schema_field(OpenApiTypes.STR)
class CheckedTextField(serializers.JSONField):
    """A choice the service checks itself (400 with the setting's code); documented as a string."""


class SettingsPatchSerializer(serializers.Serializer):
    custom_instructions = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    personality = serializers.CharField(required=False)
    display_name = serializers.CharField(required=False, max_length=100)
    owner_name = serializers.CharField(required=False, max_length=100)
    archive_access = serializers.BooleanField(required=False)
    web_search = serializers.BooleanField(required=False)
    provider_store_responses = serializers.BooleanField(required=False)
    reasoning_effort = serializers.CharField(required=False)
    verbosity = serializers.CharField(required=False)
    reasoning_summary_shown = serializers.BooleanField(required=False)
    # Checked by the service (true or false only, else 400 `invalid_image_generation`): passed on as sent.
    image_generation = StrictFlagField(required=False, allow_null=True)
    # "Elion may suggest memories": checked like image_generation (400 `invalid_memory_suggestions`).
    memory_suggestions = StrictFlagField(required=False, allow_null=True)
    # Check-ins (issue 44): checked by the service (400 `invalid_time_zone`, `invalid_check_in_proposals`).
    time_zone = CheckedTextField(required=False, allow_null=True)
    check_in_proposals = StrictFlagField(required=False, allow_null=True)
    # Voice (issue 43): checked by the service (`conversations.services.voice.settings`).
    voice = serializers.CharField(required=False)
    voice_instructions = serializers.CharField(required=False, allow_blank=True, max_length=4_000)
    voice_language = serializers.CharField(required=False, allow_blank=True, max_length=8)
    read_aloud_auto = StrictFlagField(required=False, allow_null=True)
    keep_voice_recordings = StrictFlagField(required=False, allow_null=True)
    # Web Push (issue 44): whether a notification carries the reply's text (400 `invalid_push_shows_text`).
    push_shows_text = StrictFlagField(required=False, allow_null=True)
    # Checked by `operations.backup.scheduling.backup_settings_update` (400 `invalid_backup_*`): passed on as sent.
    backup_schedule = CheckedTextField(required=False, allow_null=True)
    backup_hour = CheckedNumberField(required=False, allow_null=True)
    backup_keep_daily = CheckedNumberField(required=False, allow_null=True)
    backup_keep_weekly = CheckedNumberField(required=False, allow_null=True)
    backup_keep_monthly = CheckedNumberField(required=False, allow_null=True)


class FolderSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    hidden = serializers.BooleanField(required=False)


class ConversationCreateSerializer(serializers.Serializer):
    persona = serializers.CharField(required=False, default="elion")
    title = serializers.CharField(required=False, allow_blank=True, allow_null=True, max_length=300)
    folder_id = serializers.IntegerField(required=False, allow_null=True)
    private = serializers.BooleanField(required=False, default=False)
    # Private chats only: the snapshot holds the current memories instead of none.
    use_memories = serializers.BooleanField(required=False, default=False)


class ConversationPatchSerializer(serializers.Serializer):
    title = serializers.CharField(required=False, allow_blank=True, max_length=300)
    folder_id = serializers.IntegerField(required=False, allow_null=True)
    # Only false: the owner has read what Elion wrote by itself (issue 44; 400 `invalid_unread` otherwise).
    unread = StrictFlagField(required=False, allow_null=True)


class RewindSerializer(serializers.Serializer):
    message_id = serializers.UUIDField()


class SwitchSerializer(serializers.Serializer):
    message_id = serializers.UUIDField()


def validated(serializer_class: type[serializers.Serializer], data: object) -> dict:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def patch_fields(request: Request, allowed: Iterable[str]) -> dict:
    if not isinstance(request.data, dict):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    return {key: request.data[key] for key in allowed if key in request.data}
