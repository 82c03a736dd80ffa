"""Representations for the Memories API (docs/api.md). Shape only; rules live in services."""

from __future__ import annotations

from datetime import datetime

from rest_framework import serializers

from memories.models import Memory, MemoryProposal, MemorySource, MemoryVersion


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _id(value: object) -> str | None:
    return str(value) if value is not None else None


def memory_source_repr(memory: Memory) -> dict:
    """Where the memory came from. For an approved proposal: the conversation, the owner's message and
    the reply that proposed it (null once that conversation was deleted forever), and the reason given."""
    proposal = getattr(memory, "proposal", None) if memory.source == MemorySource.PROPOSAL else None
    return {
        "kind": memory.source,
        "label": memory.get_source_display(),
        "file": memory.source_file or None,
        "conversation_id": _id(proposal.conversation_id) if proposal else None,
        "message_id": _id(proposal.source_message_id) if proposal else None,
        "reply_id": _id(proposal.reply_id) if proposal else None,
        "reason": proposal.reason if proposal else "",
        "proposed_text": proposal.text if proposal else None,
        "proposed_at": _iso(proposal.created_at) if proposal else None,
    }


def memory_version_repr(version: MemoryVersion) -> dict:
    return {
        "text": version.text,
        "category": version.category,
        "importance": version.importance,
        "replaced_at": version.replaced_at.isoformat(),
    }


def memory_repr(memory: Memory) -> dict:
    """A memory; `chats` (how many chats' snapshots hold it) and `history` (what it said before each
    edit, newest first) when the row was read with them (`services.memories_list`, `memory_with_counts`)."""
    body = {
        "id": memory.id,
        "text": memory.text,
        "category": memory.category,
        "importance": memory.importance,
        "position": memory.position,
        "active": memory.active,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "source": memory_source_repr(memory),
    }
    if hasattr(memory, "held_by"):
        body["chats"] = memory.held_by
    if "versions" in getattr(memory, "_prefetched_objects_cache", {}):
        versions = sorted(memory.versions.all(), key=lambda v: (v.replaced_at, v.pk), reverse=True)
        body["history"] = [memory_version_repr(v) for v in versions]
    return body


def proposal_repr(proposal: MemoryProposal) -> dict:
    conversation = proposal.conversation
    return {
        "id": proposal.id,
        "text": proposal.text,
        "category": proposal.category,
        "importance": proposal.importance,
        "reason": proposal.reason,
        "status": proposal.status,
        "conversation_id": _id(proposal.conversation_id),
        "conversation_title": conversation.display_title if conversation is not None else None,
        "message_id": _id(proposal.source_message_id),
        "reply_id": _id(proposal.reply_id),
        "memory_id": proposal.memory_id,
        "created_at": proposal.created_at.isoformat(),
        "decided_at": _iso(proposal.decided_at),
    }


def snapshot_member_repr(memory: Memory) -> dict:
    """One memory of a chat's snapshot: its current text (never a past version)."""
    return {
        "id": memory.id,
        "text": memory.text,
        "category": memory.category,
        "importance": memory.importance,
        "position": memory.position,
        "active": memory.active,
    }


class MemoryWriteSerializer(serializers.Serializer):
    """Documents the body for the schema; values are checked by the services."""

    text = serializers.CharField(required=False, allow_blank=True)
    category = serializers.CharField(required=False, allow_blank=True)
    importance = serializers.IntegerField(required=False)
    active = serializers.BooleanField(required=False)


class MemoryImportSerializer(serializers.Serializer):
    memories = serializers.ListField(required=False)
    text = serializers.CharField(required=False, allow_blank=True)
    format = serializers.ChoiceField(choices=["json", "csv"], required=False)
    file = serializers.FileField(required=False)


class MemoryReorderSerializer(serializers.Serializer):
    ids = serializers.ListField(child=serializers.IntegerField())


# --- Response shapes, for the OpenAPI schema only ---------------------------


class MemorySourceSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["typed", "imported", "proposal", "unrecorded"])
    label = serializers.CharField()
    file = serializers.CharField(allow_null=True)
    conversation_id = serializers.UUIDField(allow_null=True)
    message_id = serializers.UUIDField(allow_null=True)
    reply_id = serializers.UUIDField(allow_null=True)
    reason = serializers.CharField(allow_blank=True)
    proposed_text = serializers.CharField(allow_null=True)
    proposed_at = serializers.DateTimeField(allow_null=True)


class MemoryVersionSerializer(serializers.Serializer):
    text = serializers.CharField()
    category = serializers.CharField()
    importance = serializers.IntegerField()
    replaced_at = serializers.DateTimeField()


class MemorySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    category = serializers.CharField()
    importance = serializers.IntegerField(min_value=1, max_value=5)
    position = serializers.IntegerField()
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    source = MemorySourceSerializer()
    chats = serializers.IntegerField(help_text="How many chats' snapshots hold it (never which).")
    history = MemoryVersionSerializer(many=True, help_text="What it said before each edit, newest first.")


class MemoryListSerializer(serializers.Serializer):
    results = MemorySerializer(many=True)


class ImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()


class ImportDraftSerializer(serializers.Serializer):
    text = serializers.CharField()
    category = serializers.CharField()
    importance = serializers.IntegerField()
    active = serializers.BooleanField()


class ImportPreviewSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    reaches = serializers.ChoiceField(choices=["new_threads_only"])
    memories = ImportDraftSerializer(many=True)


class ImpactSerializer(serializers.Serializer):
    threads = serializers.IntegerField()


class ProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    category = serializers.CharField()
    importance = serializers.IntegerField()
    reason = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=["pending", "approved", "dismissed"])
    conversation_id = serializers.UUIDField(allow_null=True)
    conversation_title = serializers.CharField(allow_null=True)
    message_id = serializers.UUIDField(allow_null=True)
    reply_id = serializers.UUIDField(allow_null=True)
    memory_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)


class ProposalListSerializer(serializers.Serializer):
    results = ProposalSerializer(many=True)


class ProposalApproveSerializer(serializers.Serializer):
    """Optional edits; what is left out is taken from the proposal."""

    text = serializers.CharField(required=False)
    category = serializers.CharField(required=False)
    importance = serializers.IntegerField(required=False)


class ProposalApprovedSerializer(serializers.Serializer):
    memory = MemorySerializer()
    proposal = ProposalSerializer()


class ClearedSerializer(serializers.Serializer):
    cleared = serializers.IntegerField()


class SnapshotMemberSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    category = serializers.CharField()
    importance = serializers.IntegerField()
    position = serializers.IntegerField()
    active = serializers.BooleanField()


class ConversationMemoriesSerializer(serializers.Serializer):
    results = SnapshotMemberSerializer(many=True)
