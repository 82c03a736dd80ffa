"""The ChatGPT export importer: each conversation (every branch, its images) mapped onto one archive document
and stored; the reader `import_runs` runs, and the synchronous import."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator, Sequence

from django.core.files.uploadedfile import UploadedFile

from archive.models import ArchiveCollection, ArchiveDocument, ChunkBranch, DocumentSource
from archive.services.blobs import archive_blob_write
from archive.services.documents import AttachmentDraft, clean_collection, document_store
from archive.services.import_runs import ImportFile, ImportReader, ImportSummary, ReadConversation
from archive.services.importers import export_reader
from archive.services.importers.chatgpt import parse as chatgpt
from archive.services.importers.export_steps import (
    export_items_read,
    export_limits,
    imported_assistant_name,
    stored_conversation_counted,
    uploads_import,
)
from archive.services.parsing import ChunkDraft, ConversationProblem, Turn, chunks_from_turns, render_turns, split_long
from elion.base.assistant_settings import assistant_settings_get
from elion.base.uploads import sha256_hex


def _chatgpt_identity(conversation: chatgpt.ExportedConversation) -> str:
    """The identity of a conversation's content; labels and header wording may change with settings, this
    does not, so re-importing never duplicates it. Other branches and images join it only when present,
    so a conversation with neither keeps the identity earlier imports gave it."""
    parts: list = ["chatgpt", conversation.external_id, [[t.role, t.text] for t in conversation.turns]]
    if conversation.alternate_turns:
        parts.append(["alternate", [[a.number, a.turn.role, a.turn.text] for a in conversation.alternate_turns]])
    if conversation.images:
        parts.append(["images", [image.file_id for image in conversation.images]])
    return sha256_hex(json.dumps(parts, ensure_ascii=False))


def _chatgpt_drafts(conversation: chatgpt.ExportedConversation, *, owner: str, assistant: str) -> tuple[
    list[Turn], list[ChunkDraft]
]:
    """The current branch's turns (the document's text) and the chunks of every branch, current first."""

    def labelled(turn: Turn) -> Turn:
        return Turn(owner if turn.role == "user" else assistant, turn.role, turn.text, turn.spoken_at)

    turns = [labelled(t) for t in conversation.turns]
    drafts = chunks_from_turns(turns)
    for alternate in conversation.alternate_turns:
        turn = labelled(alternate.turn)
        drafts += [
            ChunkDraft(piece, turn.speaker, turn.role, alternate.number, turn.spoken_at, ChunkBranch.ALTERNATE)
            for piece in split_long(turn.text)
        ]
    return turns, drafts


def _chatgpt_images(
    conversation: chatgpt.ExportedConversation, export: export_reader.ExportFiles, summary: ImportSummary
) -> list[AttachmentDraft]:
    """The conversation's images, stored as blobs; the ones the export lacks or cannot give are problems."""
    if conversation.images and export.archive is None:
        summary.problem(_image_problem(
            conversation, f"its {len(conversation.images)} image(s) are not in the upload (the export zip holds them)"
        ), skipped=False)
        return []
    attachments: dict[str, AttachmentDraft] = {}
    missing: list[str] = []
    for image in conversation.images:
        try:
            name, mime, data = export.image(image.file_id)
        except export_reader.UnreadableImage as exc:
            if image.file_id not in export.images:
                missing.append(image.file_id)
            else:
                summary.problem(_image_problem(conversation, exc.reason), skipped=False)
            continue
        sha256 = archive_blob_write(data)
        attachments.setdefault(sha256, AttachmentDraft(sha256, name, mime, len(data), image.turn, image.branch))
    if missing:
        summary.problem(_image_problem(
            conversation, f"image(s) not in the export: {', '.join(dict.fromkeys(missing))}"
        ), skipped=False)
    return list(attachments.values())


def _image_problem(conversation: chatgpt.ExportedConversation, reason: str) -> ConversationProblem:
    return ConversationProblem(conversation.index, conversation.file, conversation.title, reason)


def _chatgpt_document_title(conversation: chatgpt.ExportedConversation) -> str:
    return conversation.title or "Untitled ChatGPT conversation"


def chatgpt_conversation_import(
    conversation: chatgpt.ExportedConversation, *, export: export_reader.ExportFiles, summary: ImportSummary,
    collection: str, owner: str, assistant: str,
) -> int | None:
    """Store one conversation (every branch, its images) as a document unless it is already archived;
    the new document's id, else None."""
    if not conversation.turns:
        summary.skipped += 1  # nothing said on the branch the owner last saw
        return None
    digest = _chatgpt_identity(conversation)
    if ArchiveDocument.objects.filter(content_sha256=digest).exists():
        summary.duplicates += 1
        return None
    turns, drafts = _chatgpt_drafts(conversation, owner=owner, assistant=assistant)
    title = _chatgpt_document_title(conversation)
    dates = [d.strftime("%Y-%m-%d %H:%M UTC") for d in (conversation.created_at, conversation.updated_at) if d]
    header = "Imported from a ChatGPT export" + (f" · {' → '.join(dict.fromkeys(dates))}" if dates else "")
    metadata = {
        "chatgpt_conversation_id": conversation.external_id,
        "created_at": conversation.created_at.isoformat() if conversation.created_at else None,
        "updated_at": conversation.updated_at.isoformat() if conversation.updated_at else None,
    }
    result = document_store(
        digest=digest, title=title, collection=collection, source=DocumentSource.CHATGPT,
        source_name=export.name, text=render_turns(title, turns, header_lines=[header]), drafts=drafts,
        metadata=metadata, attachments=_chatgpt_images(conversation, export, summary),
    )
    return result.document.pk if stored_conversation_counted(summary, result, conversation) else None


def chatgpt_reader(*, collection: object, assistant_name: str = "") -> ImportReader:
    """The ChatGPT importer for `import_runs`: each file (a zip, conversations.json, or split files) read
    as a stream, one conversation at a time; each conversation stores itself (every branch, its images)."""
    collection = clean_collection(collection)
    row = assistant_settings_get()
    owner, assistant = row.owner_name, imported_assistant_name(DocumentSource.CHATGPT, assistant_name)

    def read(files: Sequence[ImportFile], stack: contextlib.ExitStack) -> Iterator[
        ReadConversation | ConversationProblem
    ]:
        next_index = 0
        for file in files:
            export = stack.enter_context(export_reader.export_files(file.stream, export_limits(), file.name))
            for name in export.json_names:
                with export.open_json(name) as stream:
                    next_index = yield from export_items_read(
                        chatgpt.parse_conversations(stream, file=name, first_index=next_index),
                        next_index,
                        store=lambda item, export=export: functools.partial(
                            _chatgpt_store, item, export=export, collection=collection, owner=owner,
                            assistant=assistant,
                        ),
                        instructions=lambda item: item.custom_instructions,
                    )

    return read


def _chatgpt_store(
    conversation: chatgpt.ExportedConversation, summary: ImportSummary, *, export: export_reader.ExportFiles,
    collection: str, owner: str, assistant: str,
) -> int | None:
    # Looked up when called, so the store step is the one place an import stores a conversation.
    return chatgpt_conversation_import(
        conversation, export=export, summary=summary, collection=collection, owner=owner, assistant=assistant
    )


CHATGPT_MISSING_FILE = "Attach conversations.json or the ChatGPT export zip."


def archive_chatgpt_import(
    *, uploads: Sequence[UploadedFile], collection: object = ArchiveCollection.CONVERSATIONS,
    assistant_name: str = "",
) -> ImportSummary:
    """Import every conversation of one export (one file, a zip, or its split files uploaded together), as
    `export_steps.uploads_import` does."""
    return uploads_import(
        uploads, lambda: chatgpt_reader(collection=collection, assistant_name=assistant_name),
        missing=CHATGPT_MISSING_FILE,
    )
