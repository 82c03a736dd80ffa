"""A conversation as the API answers it (docs/api.md "Conversations"): its representation
(`conversation_repr`, `conversations_repr` for many) and its documented shape (`ConversationSerializer`,
the OpenAPI component `Conversation`). One home for every app whose API answers a conversation (conversations,
continuity's Branch / Fresh Chat, memories' snapshot refresh, archive's continuation): beside the handoff
provenance and snapshot timing it reads (`continuity.services.selectors`). Shape only; rules live in services."""

from __future__ import annotations

from rest_framework import serializers

from continuity.services.selectors import (
    conversation_handoff_provenance,
    conversation_snapshot_timing,
    handoff_provenances,
    snapshot_timings,
)
from transcript.models import Conversation
from transcript.provider.binding import recorded_binding, recorded_bindings_for
from transcript.provider.gateway import ProviderBinding


def conversation_provider(conversation: Conversation) -> dict | None:
    return _provider(recorded_binding(conversation))


def conversation_handoff(conversation: Conversation) -> dict | None:
    """Structured handoff provenance; filled by the handoff layer when present."""
    return conversation_handoff_provenance(conversation)


def conversation_memory_snapshot(conversation: Conversation) -> dict | None:
    return conversation_snapshot_timing(conversation)


def conversations_repr(conversations: list[Conversation]) -> list[dict]:
    """`conversation_repr` of many conversations with a fixed number of statements (the list)."""
    ids = [conversation.pk for conversation in conversations]
    handoffs, timings, bindings = handoff_provenances(ids), snapshot_timings(ids), recorded_bindings_for(ids)
    return [
        conversation_repr(
            conversation,
            handoff=handoffs.get(conversation.pk),
            memory_snapshot=timings[conversation.pk],
            provider=_provider(bindings.get(conversation.pk)),
        )
        for conversation in conversations
    ]


def _provider(binding: ProviderBinding | None) -> dict | None:
    if binding is None:
        return None
    return {"id": binding.provider_id, "type": binding.provider_type, "model": binding.model}


_READ = object()  # `conversation_repr`: read this part for the one conversation


def conversation_repr(
    conversation: Conversation, *, handoff: object = _READ, memory_snapshot: object = _READ, provider: object = _READ
) -> dict:
    """A conversation as the API answers it; the handoff, snapshot timing and provider are read here unless
    the caller read them for many (`conversations_repr`)."""
    return {
        "id": str(conversation.id),
        "title": conversation.title,
        "persona": conversation.persona,
        "folder_id": conversation.folder_id,
        "trashed": conversation.trashed,
        "shielded": conversation.shielded,
        "private": conversation.private,
        "origin": conversation.origin,
        "created_at": conversation.created_at.isoformat(),
        "updated_at": conversation.updated_at.isoformat(),
        "handoff": conversation_handoff(conversation) if handoff is _READ else handoff,
        "memory_snapshot": conversation_memory_snapshot(conversation) if memory_snapshot is _READ else memory_snapshot,
        "provider": conversation_provider(conversation) if provider is _READ else provider,
        "in_view": conversation_in_view(conversation),
        # Elion wrote here by itself (a check-in) since the owner last opened it (issue 44).
        "unread": conversation.unread,
    }


NOTHING_OUT_OF_VIEW = {"first_message_id": None, "out_of_view": 0}


def conversation_in_view(conversation: Conversation) -> dict:
    """Where the model's view began in the last send's request (stored by that send; before any send, all)."""
    stored = conversation.in_view or NOTHING_OUT_OF_VIEW
    return {"first_message_id": stored.get("first_message_id"), "out_of_view": int(stored.get("out_of_view") or 0)}


class HandoffSerializer(serializers.Serializer):
    source_conversation_id = serializers.UUIDField(allow_null=True)
    source_message_ids = serializers.ListField(child=serializers.UUIDField())
    # Only for an archived conversation continued in a new chat (then source_conversation_id is null).
    source_document_id = serializers.IntegerField(required=False)


class SnapshotTimingSerializer(serializers.Serializer):
    captured_at = serializers.DateTimeField(allow_null=True)
    refreshed_at = serializers.DateTimeField(allow_null=True)
    provenance = serializers.ChoiceField(choices=["captured", "refreshed", "legacy"])


class ProviderSerializer(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField()
    model = serializers.CharField()


class InViewSerializer(serializers.Serializer):
    first_message_id = serializers.UUIDField(
        allow_null=True, help_text="The first message the last send's request carried after trimming; null: all."
    )
    out_of_view = serializers.IntegerField(help_text="How many messages of that branch lie above it.")


class ConversationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()
    persona = serializers.ChoiceField(choices=["elion", "clipboard"])
    folder_id = serializers.IntegerField(allow_null=True)
    trashed = serializers.BooleanField()
    shielded = serializers.BooleanField()
    private = serializers.BooleanField()
    origin = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    handoff = HandoffSerializer(allow_null=True)
    memory_snapshot = SnapshotTimingSerializer(allow_null=True)
    provider = ProviderSerializer(allow_null=True)
    in_view = InViewSerializer(help_text="Where the last send's request began (docs/api.md).")
    unread = serializers.BooleanField(help_text="Elion wrote here by itself (a check-in) since the owner last opened it.")
