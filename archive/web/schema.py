"""OpenAPI response shapes for the archive and Library API (docs/api.md "Archive", "Library").

Documentation only: the views build their bodies with `document_repr`, `library_file_repr` and friends;
these serializers describe those bodies so `/api/schema/` (and the fuzz test's response checks) know them.
"""

from __future__ import annotations

from rest_framework import serializers

from archive.models import ArchiveCollection, ChunkBranch, DocumentSource, ImportState, LibraryFileKind


class DocumentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    collection = serializers.ChoiceField(choices=ArchiveCollection.choices)
    chunks = serializers.IntegerField(min_value=0)
    source = serializers.ChoiceField(choices=DocumentSource.choices)
    created_at = serializers.DateTimeField()


class DocumentAddedSerializer(DocumentSerializer):
    duplicate = serializers.BooleanField()


class DocumentListSerializer(serializers.Serializer):
    results = DocumentSerializer(many=True)


class ChunkSerializer(serializers.Serializer):
    chunk = serializers.IntegerField(min_value=1)
    speaker = serializers.CharField(allow_blank=True)
    role = serializers.CharField(allow_blank=True)
    turn = serializers.IntegerField(allow_null=True)
    branch = serializers.ChoiceField(choices=ChunkBranch.choices)
    text = serializers.CharField(allow_blank=True)


class DocumentAttachmentSerializer(serializers.Serializer):
    sha256 = serializers.CharField()
    name = serializers.CharField()
    mime = serializers.CharField()
    size = serializers.IntegerField(min_value=0)
    turn = serializers.IntegerField(allow_null=True)
    branch = serializers.ChoiceField(choices=ChunkBranch.choices)


class DocumentDetailSerializer(DocumentSerializer):
    metadata = serializers.DictField()
    chunk_list = ChunkSerializer(many=True)
    attachments = DocumentAttachmentSerializer(many=True)


class ImportProblemSerializer(serializers.Serializer):
    index = serializers.IntegerField(min_value=0)
    title = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()
    file = serializers.CharField(allow_blank=True)


class ChatGPTImportSummarySerializer(serializers.Serializer):
    conversations = serializers.IntegerField(min_value=0)
    messages = serializers.IntegerField(min_value=0)
    alternate_messages = serializers.IntegerField(min_value=0)
    skipped = serializers.IntegerField(min_value=0)
    duplicates = serializers.IntegerField(min_value=0)
    document_ids = serializers.ListField(child=serializers.IntegerField())
    problems = ImportProblemSerializer(many=True)
    custom_instructions_suggestion = serializers.CharField(allow_null=True)


class MemorySuggestionSerializer(serializers.Serializer):
    text = serializers.CharField()
    category = serializers.CharField()


class ClaudeImportProblemSerializer(ImportProblemSerializer):
    index = serializers.IntegerField(min_value=0, allow_null=True)  # null: memories.json, not a conversation


class ClaudeImportSummarySerializer(ChatGPTImportSummarySerializer):
    problems = ClaudeImportProblemSerializer(many=True)
    projects = serializers.IntegerField(min_value=0, help_text="projects of projects.json archived as new documents")
    memory_suggestions = MemorySuggestionSerializer(many=True)


class ImportJobQueuedSerializer(serializers.Serializer):
    job_id = serializers.UUIDField()


class ImportJobErrorSerializer(serializers.Serializer):
    error = serializers.CharField()
    detail = serializers.CharField()


class ImportJobFileSerializer(serializers.Serializer):
    name = serializers.CharField(allow_blank=True)
    size = serializers.IntegerField(min_value=0, allow_null=True)


class ImportJobSerializer(ChatGPTImportSummarySerializer):
    job_id = serializers.UUIDField()
    kind = serializers.CharField()
    state = serializers.ChoiceField(choices=ImportState.choices)
    done = serializers.IntegerField(min_value=0)
    total = serializers.IntegerField(min_value=0, allow_null=True, help_text="null until the export is counted")
    error = ImportJobErrorSerializer(allow_null=True)
    files = ImportJobFileSerializer(many=True)
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    # A Claude.ai import's job (kind "claude") answers the Claude.ai import's fields too.
    problems = ClaudeImportProblemSerializer(many=True)
    projects = serializers.IntegerField(min_value=0, required=False, help_text="kind claude only")
    memory_suggestions = MemorySuggestionSerializer(many=True, required=False, help_text="kind claude only")


class ArchiveHitSerializer(serializers.Serializer):
    document_id = serializers.IntegerField()
    document_title = serializers.CharField()
    collection = serializers.ChoiceField(choices=ArchiveCollection.choices)
    chunk = serializers.IntegerField(min_value=1)
    speaker = serializers.CharField(allow_blank=True)
    excerpt = serializers.CharField(allow_blank=True)
    branch = serializers.ChoiceField(choices=ChunkBranch.choices)


class ArchiveSearchSerializer(serializers.Serializer):
    results = ArchiveHitSerializer(many=True)


class LibraryFileSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=LibraryFileKind.choices)
    size = serializers.IntegerField(min_value=0)
    characters = serializers.IntegerField(min_value=0)
    created_at = serializers.DateTimeField()


class LibraryFileAddedSerializer(LibraryFileSerializer):
    duplicate = serializers.BooleanField()


class LibraryFileListSerializer(serializers.Serializer):
    results = LibraryFileSerializer(many=True)


class LibraryPageSerializer(LibraryFileSerializer):
    offset = serializers.IntegerField(min_value=0)
    next_offset = serializers.IntegerField(allow_null=True)
    total_characters = serializers.IntegerField(min_value=0)
    text = serializers.CharField(allow_blank=True)


# --- Request bodies ------------------------------------------------------------------------


class DocumentUploadSerializer(serializers.Serializer):
    file = serializers.FileField()
    collection = serializers.ChoiceField(choices=ArchiveCollection.choices)
    title = serializers.CharField(required=False, allow_blank=True)


class DocumentTextSerializer(serializers.Serializer):
    text = serializers.CharField()
    collection = serializers.ChoiceField(choices=ArchiveCollection.choices)
    title = serializers.CharField(required=False, allow_blank=True)


class ChatGPTImportSerializer(serializers.Serializer):
    file = serializers.ListField(child=serializers.FileField())
    collection = serializers.ChoiceField(choices=ArchiveCollection.choices, required=False)
    assistant_name = serializers.CharField(required=False, allow_blank=True)


class ClaudeImportSerializer(serializers.Serializer):
    file = serializers.FileField()
    collection = serializers.ChoiceField(choices=ArchiveCollection.choices, required=False)
    assistant_name = serializers.CharField(required=False, allow_blank=True)


class LibraryUploadSerializer(serializers.Serializer):
    file = serializers.FileField()
    name = serializers.CharField(required=False, allow_blank=True)


class LibraryTextSerializer(serializers.Serializer):
    name = serializers.CharField()
    text = serializers.CharField()


class UploadCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=300)
    size = serializers.IntegerField(min_value=1)


class UploadStateSerializer(serializers.Serializer):
    upload_id = serializers.UUIDField()
    name = serializers.CharField()
    size = serializers.IntegerField(min_value=1)
    received = serializers.IntegerField(min_value=0)
