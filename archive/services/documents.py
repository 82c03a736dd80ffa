"""Writes on the archive: documents from uploads, pasted text, our exports (the ChatGPT and
Claude.ai importers in `archive.services.importers` store through `document_store`).

Every interface (page, API, admin) calls these. A document and its chunks are
stored in one transaction; the same content again (by content hash) returns
the first document instead of storing it twice. Inputs are read and checked
completely before the first write, so a bad file stores nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from archive.models import (
    IMPORTED_ASSISTANT_NAMES,
    ArchiveAttachment,
    ArchiveChunk,
    ArchiveCollection,
    ArchiveDocument,
    DocumentSource,
)
from archive.services.blobs import BlobProblem, archive_blob_read
from archive.services.parsing import (
    PARSER_VERSION,
    ChunkDraft,
    SpeakerNames,
    Turn,
    chunk_text,
    chunks_from_turns,
    render_turns,
    speaker_names,
)
from archive.services.search import search_text_for
from elion.base.assistant_settings import assistant_settings_get
from elion.base.errors import Conflict, InvalidInput, NotFound
from elion.base.rows import access_row, parse_sha256
from elion.base.uploads import (
    clean_pasted_text,
    closing_upload,
    decode_text,
    normalise_newlines,
    read_upload,
    sha256_hex,
)

TITLE_MAX = 300
MARKDOWN_SUFFIXES = {".md", ".markdown"}


@dataclass(frozen=True)
class DocumentResult:
    document: ArchiveDocument
    duplicate: bool


@dataclass(frozen=True)
class AttachmentDraft:
    sha256: str
    name: str
    mime: str
    size: int
    turn: int | None
    branch: str


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


def document_store(
    *, digest: str, title: str, collection: str, source: str, source_name: str, text: str,
    drafts: list[ChunkDraft], metadata: dict | None = None, attachments: Sequence[AttachmentDraft] = (),
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
                    turn=draft.turn, spoken_at=draft.spoken_at, branch=draft.branch, text=draft.text,
                    search_text=search_text_for(draft.text),
                )
                for position, draft in enumerate(drafts, start=1)
            )
            ArchiveAttachment.objects.bulk_create(
                ArchiveAttachment(
                    document=document, position=position, sha256=a.sha256, name=a.name[:300], mime=a.mime,
                    size=a.size, turn=a.turn, branch=a.branch,
                )
                for position, a in enumerate(attachments, start=1)
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
    return document_store(
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
        return document_store(
            digest=content_digest(rendered), title=_title(title, export_title, stem), collection=collection,
            source=DocumentSource.CONVERSATION_EXPORT, source_name=name, text=rendered,
            drafts=chunks_from_turns(turns),
        )
    source = DocumentSource.MARKDOWN if PurePath(name).suffix.lower() in MARKDOWN_SUFFIXES else DocumentSource.TEXT
    parsed, drafts = chunk_text(text, names)
    return document_store(
        digest=content_digest(text), title=_title(title, parsed.title, stem), collection=collection,
        source=source, source_name=name, text=text, drafts=drafts,
    )


def imported_voice(document: ArchiveDocument, chunks: Iterable[ArchiveChunk]) -> str:
    """The assistant's name in another system's export ("ChatGPT", "Claude", or the name given at import);
    "" for Elion's own documents."""
    if document.source not in IMPORTED_ASSISTANT_NAMES:
        return ""
    spoken = (chunk.speaker for chunk in chunks if chunk.role == "assistant" and chunk.speaker)
    return next(spoken, IMPORTED_ASSISTANT_NAMES[document.source])


def document_attachments(document: ArchiveDocument) -> list[dict]:
    return [
        {"sha256": a.sha256, "name": a.name, "mime": a.mime, "size": a.size, "turn": a.turn, "branch": a.branch}
        for a in document.attachments.all()
    ]


def document_attachment_content(*, document_id: int | str, sha256: object) -> tuple[ArchiveAttachment, bytes]:
    """An image of a document, its bytes verified against its hash."""
    document = access_document(document_id)
    digest = parse_sha256(sha256)
    attachment = document.attachments.filter(sha256=digest).first() if digest is not None else None
    if attachment is None:
        raise NotFound("The document has no attachment with that sha256.", code="attachment_not_found")
    try:
        return attachment, archive_blob_read(attachment.sha256, attachment.size)
    except BlobProblem as exc:
        raise Conflict(
            f"The attachment's stored bytes are {exc.reason}.",
            code="attachment_unavailable",
        ) from exc


@transaction.atomic
def archive_document_delete(*, document_id: int | str) -> None:
    access_document(document_id).delete()
