"""Representations for the Memories API (docs/api.md). Shape only; rules live in services."""

from __future__ import annotations

from rest_framework import serializers

from memories.models import Memory


def memory_repr(memory: Memory) -> dict:
    return {
        "id": memory.id,
        "text": memory.text,
        "category": memory.category,
        "importance": memory.importance,
        "position": memory.position,
        "active": memory.active,
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
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


class MemorySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    category = serializers.CharField()
    importance = serializers.IntegerField(min_value=1, max_value=5)
    position = serializers.IntegerField()
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


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
