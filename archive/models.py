"""The archive (explicit historical access) and the Library.

Archive documents are historical material the owner uploads on purpose:
conversations, prior incarnations, papers and testimony. They are chunked
once, at ingestion, and the chunks are what search reads; a parser that later
learns new labels never invalidates chunks already stored. Nothing here is
ever injected into a model request by itself: the model reads it only through
its deliberate tools (seed, "Archive Compatibility").

Library files are documents the owner places for Elion to read, page by page.
"""

from __future__ import annotations

import uuid

from django.db import models


class ArchiveCollection(models.TextChoices):
    CONVERSATIONS = "conversations", "Historical conversations"
    INCARNATIONS = "incarnations", "Prior incarnations"
    PAPERS = "papers", "Papers"
    TESTIMONY = "testimony", "Testimony"


class DocumentSource(models.TextChoices):
    TEXT = "text", "Plain text"
    MARKDOWN = "markdown", "Markdown"
    CONVERSATION_EXPORT = "conversation_export", "Elion conversation export"
    CHATGPT = "chatgpt", "ChatGPT export"
    CLAUDE = "claude", "Claude.ai export"


# Another system's export (issue 34, "Imported voices kept apart"): its assistant is labelled by its source
# ("ChatGPT said:", "Claude said:") unless the owner names it at import, never with Elion's name, and a
# handoff from it ("Continue in a new chat") carries that label. Elion's own documents keep the seed's labels.
IMPORTED_ASSISTANT_NAMES = {DocumentSource.CHATGPT: "ChatGPT", DocumentSource.CLAUDE: "Claude"}


class ArchiveDocument(models.Model):
    title = models.CharField(max_length=300)
    collection = models.CharField(max_length=20, choices=ArchiveCollection.choices)
    source = models.CharField(max_length=30, choices=DocumentSource.choices, default=DocumentSource.TEXT)
    source_name = models.CharField(max_length=300, blank=True, default="")
    # sha256 of the normalised content: the same content uploaded twice is one document.
    content_sha256 = models.CharField(max_length=64, unique=True)
    text = models.TextField()
    # Which parser produced the chunks; stored chunks stay valid across versions.
    parser_version = models.CharField(max_length=40, blank=True, default="")
    # Provenance such as a ChatGPT conversation id and its dates.
    metadata = models.JSONField(default=dict, blank=True)
    chunk_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    # The background import that stored it (its answer's `document_ids`); null for everything else.
    import_job = models.ForeignKey(
        "ImportJob", null=True, blank=True, on_delete=models.SET_NULL, related_name="documents"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["collection", "-created_at"], name="archive_doc_collection_recent")]

    def __str__(self) -> str:
        return self.title


class ChunkBranch(models.TextChoices):
    CURRENT = "current", "The branch the owner last saw"
    ALTERNATE = "alternate", "Another branch (an edit or a regeneration)"


class ArchiveChunk(models.Model):
    document = models.ForeignKey(ArchiveDocument, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()  # 1-based, the "chunk" a citation names
    # The speaker as labelled in the source ("Voicefire 5.1"); empty for prose.
    speaker = models.CharField(max_length=200, blank=True, default="")
    role = models.CharField(max_length=20, blank=True, default="")  # user | assistant | ""
    turn = models.PositiveIntegerField(null=True, blank=True)  # 1-based turn number; null for prose
    spoken_at = models.DateTimeField(null=True, blank=True)
    # Imported conversations keep every branch: the document's text is the
    # current one; turns of the others are chunks marked alternate.
    branch = models.CharField(max_length=10, choices=ChunkBranch.choices, default=ChunkBranch.CURRENT)
    text = models.TextField()
    # Lower-cased words separated by single spaces. Both databases index this
    # column (FTS5 on SQLite, a GIN tsvector index on PostgreSQL) so they see
    # identical tokens and return identical results.
    search_text = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="archive_chunk_position_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position}"


class ArchiveAttachment(models.Model):
    """An image an imported conversation showed, kept as a content-addressed blob
    (`archive.attachments`: `<attachment root>/archive/<sha[:2]>/<sha>`)."""

    document = models.ForeignKey(ArchiveDocument, on_delete=models.CASCADE, related_name="attachments")
    position = models.PositiveIntegerField()  # 1-based, in the order the conversation showed them
    sha256 = models.CharField(max_length=64)
    name = models.CharField(max_length=300)  # the file's name in the export
    mime = models.CharField(max_length=100)
    size = models.PositiveBigIntegerField()
    turn = models.PositiveIntegerField(null=True, blank=True)  # the turn it belongs to (or follows)
    branch = models.CharField(max_length=10, choices=ChunkBranch.choices, default=ChunkBranch.CURRENT)

    class Meta:
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="archive_attachment_position_unique"),
            models.UniqueConstraint(fields=["document", "sha256"], name="archive_attachment_blob_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}:{self.name}"


class ImportState(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class ImportJob(models.Model):
    """An export imported in the background (django-q2, `archive.tasks.run_import_job`).

    `kind` names the importer (`archive.services.importers.sources.IMPORTERS`). The uploaded
    files wait under `ELION_IMPORT_DIR/<id>/` until the job is done. Progress is
    written in the same transaction as each conversation, so `done` and the
    counts always say exactly what is stored; a resumed run starts at `done`.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # No choices here: an importer added later ("claude") needs no migration to be a kind.
    kind = models.CharField(max_length=20)
    state = models.CharField(max_length=10, choices=ImportState.choices, default=ImportState.QUEUED)
    # What the import was asked: {"collection", "assistant_name"}.
    options = models.JSONField(default=dict, blank=True)
    # The saved uploads, in upload order: [{"name", "path", "size"}] (path relative to the job's folder).
    files = models.JSONField(default=list, blank=True)
    total = models.PositiveIntegerField(null=True, blank=True)  # conversations in the export, once counted
    done = models.PositiveIntegerField(default=0)  # conversations handled (stored, duplicate or skipped)
    # The answer's counts ({"conversations", "messages", …}), as of `done`: written with every conversation.
    result = models.JSONField(default=dict, blank=True)
    # What the first pass found for the owner to take ({"custom_instructions_suggestion"}, and a Claude.ai
    # export's {"memory_suggestions", "memories_problem"}): written once, when the export has been counted.
    offers = models.JSONField(default=dict, blank=True)
    problems = models.JSONField(default=list, blank=True)  # the answer's `problems`, as of `done`
    error = models.JSONField(null=True, blank=True)  # {"error", "detail"} of a failed import
    # The run that holds the job ("" between two slices of a long import); a run whose token no longer
    # matches stops.
    runner = models.CharField(max_length=32, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)  # also the running job's heartbeat
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["state", "-created_at"], name="archive_import_job_state")]

    def __str__(self) -> str:
        return f"{self.kind} import {self.pk} ({self.state})"


class LibraryFileKind(models.TextChoices):
    TEXT = "text", "Text"
    MARKDOWN = "markdown", "Markdown"
    CSV = "csv", "CSV"
    PDF = "pdf", "PDF"


class LibraryFile(models.Model):
    name = models.CharField(max_length=300)
    kind = models.CharField(max_length=20, choices=LibraryFileKind.choices)
    sha256 = models.CharField(max_length=64, unique=True)  # of the uploaded bytes
    size = models.PositiveBigIntegerField()  # bytes uploaded
    # The readable text (extracted for PDFs); what the model's reader pages through.
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name
