"""Writes on the archive: documents from uploads, pasted text, our exports and ChatGPT exports.

Every interface (page, API, admin) calls these. A document and its chunks are
stored in one transaction; the same content again (by content hash) returns
the first document instead of storing it twice. Inputs are read and checked
completely before the first write, so a bad file stores nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import PurePath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from archive import chatgpt
from archive.models import ArchiveChunk, ArchiveCollection, ArchiveDocument, DocumentSource
from archive.parsing import (
    PARSER_VERSION,
    ChunkDraft,
    SpeakerNames,
    Turn,
    chunk_text,
    chunks_from_turns,
    render_turns,
    speaker_names,
)
from archive.search import search_text_for
from archive.uploads import (
    clean_pasted_text,
    closing_upload,
    decode_text,
    normalise_newlines,
    read_upload,
    sha256_hex,
    too_large,
)
from conversations.assistant_settings import assistant_settings_get
from elion.errors import InvalidInput
from elion.rows import access_row

TITLE_MAX = 300
MARKDOWN_SUFFIXES = {".md", ".markdown"}


@dataclass(frozen=True)
class DocumentResult:
    document: ArchiveDocument
    duplicate: bool


@dataclass
class ImportSummary:
    conversations: int = 0  # imported as new documents
    messages: int = 0  # turns in those documents
    skipped: int = 0  # conversations with nothing said (empty, or only tool/system traffic)
    duplicates: int = 0  # already in the archive
    document_ids: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "conversations": self.conversations,
            "messages": self.messages,
            "skipped": self.skipped,
            "duplicates": self.duplicates,
            "document_ids": self.document_ids,
        }


def clean_collection(collection: object) -> str:
    if collection not in ArchiveCollection.values:
        raise InvalidInput(
            f"collection must be one of {', '.join(ArchiveCollection.values)}.", code="unknown_collection"
        )
    return str(collection)


def _names() -> SpeakerNames:
    row = assistant_settings_get()
    return speaker_names(row.owner_name, row.display_name)


def content_digest(text: str) -> str:
    """Hash of the content as stored: newline style and trailing whitespace don't make it new."""
    return sha256_hex(normalise_newlines(text).rstrip())


def _title(*candidates: str) -> str:
    for candidate in candidates:
        flat = " ".join((candidate or "").split())
        if flat:
            return flat[:TITLE_MAX]
    return "Untitled document"


def access_document(document_id: int | str) -> ArchiveDocument:
    return access_row(
        ArchiveDocument.objects.all(),
        document_id,
        kind="int",
        missing="No archive document has that id.",
        code="document_not_found",
    )


def _store(
    *, digest: str, title: str, collection: str, source: str, source_name: str, text: str,
    drafts: list[ChunkDraft], metadata: dict | None = None,
) -> DocumentResult:
    """Store a document and its chunks as one unit, unless its content is already here."""
    existing = ArchiveDocument.objects.filter(content_sha256=digest).first()
    if existing is not None:
        return DocumentResult(existing, duplicate=True)
    if not drafts:
        raise InvalidInput("The document has no text to archive.", code="empty_file")
    try:
        # One transaction per document: a failure leaves neither document nor chunks.
        with transaction.atomic():
            document = ArchiveDocument.objects.create(
                title=title, collection=collection, source=source, source_name=source_name[:300],
                content_sha256=digest, text=text, parser_version=PARSER_VERSION,
                metadata=metadata or {}, chunk_count=len(drafts),
            )
            ArchiveChunk.objects.bulk_create(
                ArchiveChunk(
                    document=document, position=position, speaker=draft.speaker[:200], role=draft.role,
                    turn=draft.turn, spoken_at=draft.spoken_at, text=draft.text,
                    search_text=search_text_for(draft.text),
                )
                for position, draft in enumerate(drafts, start=1)
            )
    except IntegrityError:
        # A concurrent upload of the same content won the unique hash.
        existing = ArchiveDocument.objects.filter(content_sha256=digest).first()
        if existing is None:
            raise
        return DocumentResult(existing, duplicate=True)
    return DocumentResult(document, duplicate=False)


def archive_document_add_text(*, text: object, collection: object, title: str = "") -> DocumentResult:
    """A document from pasted text (plain text or Markdown with speaker labels)."""
    collection = clean_collection(collection)
    text = clean_pasted_text(text, settings.ELION_ARCHIVE_MAX_FILE_BYTES)
    parsed, drafts = chunk_text(text, _names())
    return _store(
        digest=content_digest(text), title=_title(title, parsed.title, text.strip().split("\n", 1)[0]),
        collection=collection, source=DocumentSource.TEXT, source_name="", text=text, drafts=drafts,
    )


def _export_turns(payload: dict, names: SpeakerNames) -> tuple[str, list[Turn]]:
    """Turns of our JSON export: live-branch user/assistant speech, never handoff bubbles."""
    conversation = payload.get("conversation") if isinstance(payload.get("conversation"), dict) else {}
    row = assistant_settings_get()
    assistant = "Clipboard" if conversation.get("persona") == "clipboard" else row.display_name
    turns = []
    for message in payload["messages"]:
        if not isinstance(message, dict) or message.get("kind", "ordinary") != "ordinary":
            continue
        role, content = message.get("role"), message.get("content")
        if role in ("user", "assistant") and isinstance(content, str) and content.strip():
            speaker = row.owner_name if role == "user" else assistant
            turns.append(Turn(speaker, names.role(speaker) or role, content.strip()))
    return str(conversation.get("title") or ""), turns


def _our_json_export(text: str) -> dict | None:
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        return None
    if isinstance(payload, dict) and isinstance(payload.get("messages"), list) and "conversation" in payload:
        return payload
    return None


def archive_document_upload(*, upload: UploadedFile, collection: object, title: str = "") -> DocumentResult:
    """A document from an uploaded file: text, Markdown, or one of our conversation exports."""
    with closing_upload(upload):
        collection = clean_collection(collection)
        if upload is None:
            raise InvalidInput("Attach a file, or send title and text.", code="missing_file")
        name = upload.name or ""
        text = decode_text(read_upload(upload, settings.ELION_ARCHIVE_MAX_FILE_BYTES))
    names = _names()
    stem = PurePath(name).stem
    payload = _our_json_export(text) if text.lstrip().startswith("{") else None
    if payload is not None:
        export_title, turns = _export_turns(payload, names)
        rendered = render_turns(export_title, turns)
        return _store(
            digest=content_digest(rendered), title=_title(title, export_title, stem), collection=collection,
            source=DocumentSource.CONVERSATION_EXPORT, source_name=name, text=rendered,
            drafts=chunks_from_turns(turns),
        )
    source = DocumentSource.MARKDOWN if PurePath(name).suffix.lower() in MARKDOWN_SUFFIXES else DocumentSource.TEXT
    parsed, drafts = chunk_text(text, names)
    return _store(
        digest=content_digest(text), title=_title(title, parsed.title, stem), collection=collection,
        source=source, source_name=name, text=text, drafts=drafts,
    )


# --- ChatGPT export ------------------------------------------------------------


def _chatgpt_document(conversation: chatgpt.ExportedConversation, *, owner: str, assistant: str) -> DocumentResult:
    turns = [
        Turn(owner if t.role == "user" else assistant, t.role, t.text, t.spoken_at) for t in conversation.turns
    ]
    title = conversation.title or "Untitled ChatGPT conversation"
    dates = [d.strftime("%Y-%m-%d %H:%M UTC") for d in (conversation.created_at, conversation.updated_at) if d]
    header = "Imported from a ChatGPT export" + (f" · {' → '.join(dict.fromkeys(dates))}" if dates else "")
    text = render_turns(title, turns, header_lines=[header])
    # Labels and header wording may change with settings; the identity of a
    # conversation's content does not, so re-importing never duplicates it.
    identity = json.dumps(
        ["chatgpt", conversation.external_id, [[t.role, t.text] for t in conversation.turns]], ensure_ascii=False
    )
    metadata = {
        "chatgpt_conversation_id": conversation.external_id,
        "created_at": conversation.created_at.isoformat() if conversation.created_at else None,
        "updated_at": conversation.updated_at.isoformat() if conversation.updated_at else None,
    }
    return sha256_hex(identity), title, text, chunks_from_turns(turns), metadata


def archive_chatgpt_import(
    *, upload: UploadedFile, collection: object = ArchiveCollection.CONVERSATIONS, assistant_name: str = ""
) -> ImportSummary:
    """Import each conversation's current branch as one document; duplicates are skipped."""
    with closing_upload(upload):
        collection = clean_collection(collection)
        if upload is None:
            raise InvalidInput("Attach conversations.json or the ChatGPT export zip.", code="missing_file")
        if upload.size is not None and upload.size > settings.ELION_ARCHIVE_IMPORT_MAX_BYTES:
            raise too_large("The export", settings.ELION_ARCHIVE_IMPORT_MAX_BYTES)
        limits = chatgpt.ExportLimits(
            max_json_bytes=settings.ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES,
            max_members=settings.ELION_ARCHIVE_IMPORT_MAX_MEMBERS,
        )
        with chatgpt.export_json_stream(upload, limits) as stream:
            conversations = chatgpt.parse_conversations(stream)
    row = assistant_settings_get()
    owner, assistant = row.owner_name, " ".join(assistant_name.split())[:60] or row.display_name
    summary = ImportSummary()
    for conversation in conversations:
        if not conversation.turns:
            summary.skipped += 1
            continue
        digest, title, text, drafts, metadata = _chatgpt_document(conversation, owner=owner, assistant=assistant)
        result = _store(
            digest=digest, title=title, collection=collection, source=DocumentSource.CHATGPT,
            source_name=upload.name or "", text=text, drafts=drafts, metadata=metadata,
        )
        if result.duplicate:
            summary.duplicates += 1
        else:
            summary.conversations += 1
            summary.messages += len(conversation.turns)
            summary.document_ids.append(result.document.pk)
    return summary


@transaction.atomic
def archive_document_delete(*, document_id: int | str) -> None:
    access_document(document_id).delete()
