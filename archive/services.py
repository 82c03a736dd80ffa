"""Writes on the archive: documents from uploads, pasted text, our exports, ChatGPT and Claude.ai exports.

Every interface (page, API, admin) calls these. A document and its chunks are
stored in one transaction; the same content again (by content hash) returns
the first document instead of storing it twice. Inputs are read and checked
completely before the first write, so a bad file stores nothing.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import IntegrityError, transaction

from archive import chatgpt, claude
from archive.blobs import BlobProblem, archive_blob_read, archive_blob_write
from archive.import_runs import (
    ImportFile,
    ImportReader,
    ImportSummary,
    ReadConversation,
    ReadOffer,
    import_run,
)
from archive.models import (
    IMPORTED_ASSISTANT_NAMES,
    ArchiveAttachment,
    ArchiveChunk,
    ArchiveCollection,
    ArchiveDocument,
    ChunkBranch,
    DocumentSource,
)
from archive.parsing import (
    PARSER_VERSION,
    ChunkDraft,
    ConversationProblem,
    SpeakerNames,
    Turn,
    chunk_text,
    chunks_from_turns,
    render_turns,
    speaker_names,
    split_long,
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
from elion.errors import Conflict, InvalidInput, NotFound, ServiceError
from elion.input_checks import json_load_checked
from elion.rows import access_row, parse_sha256
from memories import importing
from memories.models import Memory

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


def _store(
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
    conversation: chatgpt.ExportedConversation, export: chatgpt.ExportFiles, summary: ImportSummary
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
        except chatgpt.UnreadableImage as exc:
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
    conversation: chatgpt.ExportedConversation, *, export: chatgpt.ExportFiles, summary: ImportSummary,
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
    result = _store(
        digest=digest, title=title, collection=collection, source=DocumentSource.CHATGPT,
        source_name=export.name, text=render_turns(title, turns, header_lines=[header]), drafts=drafts,
        metadata=metadata, attachments=_chatgpt_images(conversation, export, summary),
    )
    if result.duplicate:  # a concurrent import stored it first
        summary.duplicates += 1
        return None
    summary.conversations += 1
    summary.messages += len(conversation.turns)
    summary.alternate_messages += len(conversation.alternate_turns)
    return result.document.pk


def custom_instructions_suggestion(instructions: str) -> str | None:
    """The custom instructions an export carried, unless Settings already hold exactly them."""
    suggestion = instructions.strip()
    if not suggestion or suggestion == assistant_settings_get().custom_instructions.strip():
        return None
    return suggestion


def _export_limits() -> chatgpt.ExportLimits:
    return chatgpt.ExportLimits(
        max_json_bytes=settings.ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES,
        max_members=settings.ELION_ARCHIVE_IMPORT_MAX_MEMBERS,
        max_image_bytes=settings.ELION_ATTACHMENT_MAX_BYTES,
    )


def imported_assistant_name(source: str, assistant_name: object = "") -> str:
    """The label of an imported export's assistant: the name the owner gave, else its source's own
    ("ChatGPT", "Claude"); never the display name of Elion (`IMPORTED_ASSISTANT_NAMES`)."""
    return " ".join(str(assistant_name or "").split())[:60] or IMPORTED_ASSISTANT_NAMES[source]


def imported_voice(document: ArchiveDocument, chunks: Iterable[ArchiveChunk]) -> str:
    """The assistant's name in another system's export ("ChatGPT", "Claude", or the name given at import);
    "" for Elion's own documents."""
    if document.source not in IMPORTED_ASSISTANT_NAMES:
        return ""
    spoken = (chunk.speaker for chunk in chunks if chunk.role == "assistant" and chunk.speaker)
    return next(spoken, IMPORTED_ASSISTANT_NAMES[document.source])


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
            export = stack.enter_context(chatgpt.export_files(file.stream, _export_limits(), file.name))
            for name in export.json_names:
                with export.open_json(name) as stream:
                    next_index = yield from _items_read(
                        chatgpt.parse_conversations(stream, file=name, first_index=next_index),
                        next_index,
                        store=lambda item, export=export: functools.partial(
                            _chatgpt_store, item, export=export, collection=collection, owner=owner,
                            assistant=assistant,
                        ),
                        instructions=lambda item: item.custom_instructions,
                    )

    return read


# What an export's parsers read besides problems: one archive document each.
ParsedItem = chatgpt.ExportedConversation | claude.ClaudeConversation | claude.ClaudeProject


def _items_read(
    items: Iterable[ParsedItem | ConversationProblem],
    next_index: int,
    *,
    store: Callable[[ParsedItem], Callable[[ImportSummary], int | None]],
    instructions: Callable[[ParsedItem], str] = lambda item: "",
) -> Generator[ReadConversation | ConversationProblem, None, int]:
    """An export's parsed items (conversations or projects) as `import_runs` takes them, one at a time:
    a problem as it is, anything else as a `ReadConversation` that stores itself with `store(item)`,
    carrying `instructions(item)`. Returns the index after the last item (`next_index` when none)."""
    for item in items:
        next_index = item.index + 1
        if isinstance(item, ConversationProblem):
            yield item
            continue
        yield ReadConversation(
            index=item.index,
            store=store(item),
            custom_instructions=instructions(item),
            moment=item.updated_at or item.created_at,
        )
    return next_index


def _chatgpt_store(
    conversation: chatgpt.ExportedConversation, summary: ImportSummary, *, export: chatgpt.ExportFiles,
    collection: str, owner: str, assistant: str,
) -> int | None:
    # Looked up when called, so the store step is the one place an import stores a conversation.
    return chatgpt_conversation_import(
        conversation, export=export, summary=summary, collection=collection, owner=owner, assistant=assistant
    )


def import_files_check(uploads: Sequence[UploadedFile | None], missing: str) -> list[UploadedFile]:
    """The uploaded files of one import, within the size limit; 400/413 saying why not."""
    uploads = [upload for upload in uploads if upload is not None]
    if not uploads:
        raise InvalidInput(missing, code="missing_file")
    if sum(upload.size or 0 for upload in uploads) > settings.ELION_ARCHIVE_IMPORT_MAX_BYTES:
        raise too_large("The export", settings.ELION_ARCHIVE_IMPORT_MAX_BYTES)
    return uploads


CHATGPT_MISSING_FILE = "Attach conversations.json or the ChatGPT export zip."


def archive_chatgpt_import(
    *, uploads: Sequence[UploadedFile], collection: object = ArchiveCollection.CONVERSATIONS,
    assistant_name: str = "",
) -> ImportSummary:
    """Import every conversation of one export (one file, a zip, or its split files uploaded together).

    Every file is read through once before anything is stored, so a damaged file or one that is not an
    export stores nothing; a conversation that cannot be read is skipped and named in `problems`. Both
    passes stream: memory is bounded by the largest conversation, not the export."""
    with contextlib.ExitStack() as stack:
        for upload in uploads:
            stack.enter_context(closing_upload(upload))
        reader = chatgpt_reader(collection=collection, assistant_name=assistant_name)
        files = [ImportFile(u.name or "", u, u.size) for u in import_files_check(uploads, CHATGPT_MISSING_FILE)]
        return import_run(reader, files, suggestion=custom_instructions_suggestion)


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


# --- Claude.ai export ----------------------------------------------------------


@dataclass
class ClaudeImportSummary(ImportSummary):
    """The ChatGPT import's answer, the projects it archived, and what the export's `memories.json` offers
    the memory import."""

    projects: int = 0  # projects of projects.json archived as new documents
    # `{"text", "category"}` items the memory import preview takes as they are; none already held.
    memory_suggestions: list[dict] = field(default_factory=list)
    memories_problem: str | None = None  # why memories.json could not be read

    def counts(self) -> dict:
        return {**super().counts(), "projects": self.projects}

    def offers(self) -> dict:
        return {**super().offers(), "memory_suggestions": self.memory_suggestions,
                "memories_problem": self.memories_problem}

    @classmethod
    def fields_from_dict(cls, data: dict) -> dict:
        suggestions = data.get("memory_suggestions")
        return {**super().fields_from_dict(data), "projects": int(data.get("projects") or 0),
                "memory_suggestions": suggestions if isinstance(suggestions, list) else [],
                "memories_problem": data.get("memories_problem")}

    def as_dict(self) -> dict:
        body = super().as_dict()
        if self.memories_problem is not None:
            body["problems"].append({"index": None, "title": claude.MEMORIES_MEMBER, "reason": self.memories_problem,
                                     "file": claude.MEMORIES_MEMBER})
        return {**body, "projects": self.projects, "memory_suggestions": self.memory_suggestions}


def _claude_identity(conversation: claude.ClaudeConversation) -> str:
    """The identity of a conversation's content, independent of labels and settings (see `_chatgpt_identity`)."""
    parts: list = ["claude", conversation.external_id, [[t.role, t.text] for t in conversation.turns]]
    if conversation.attachments:
        parts.append(["attachments", [[a.after_turn, a.name, a.text] for a in conversation.attachments]])
    # Other branches join the identity only when present, so a conversation without keeps the identity
    # earlier imports gave it.
    if conversation.alternate_turns:
        parts.append(["alternate", [[a.number, a.turn.role, a.turn.text] for a in conversation.alternate_turns]])
    if conversation.alternate_attachments:
        parts.append(["alternate_attachments", [[a.name, a.text] for a in _alternate_files(conversation)]])
    return sha256_hex(json.dumps(parts, ensure_ascii=False))


def _alternate_files(conversation: claude.ClaudeConversation) -> list[claude.AttachmentText]:
    """The files attached on other branches, less those the current branch (or an earlier one) has already:
    an edited message keeps its files."""
    seen = {(a.name, a.text) for a in conversation.attachments}
    found = []
    for attachment in conversation.alternate_attachments:
        if (attachment.name, attachment.text) not in seen:
            seen.add((attachment.name, attachment.text))
            found.append(attachment)
    return found


def attachment_speaker(name: str) -> str:
    """The label of an attached file's text: the file speaks, never the owner."""
    return f"Attachment: {name}"


def _claude_drafts(conversation: claude.ClaudeConversation, *, owner: str, assistant: str) -> tuple[
    list[Turn], list[ChunkDraft]
]:
    """The turns (the document's text) and the chunks: each turn, then the text of the files attached with it,
    as chunks of no turn and no role (so no handoff, no label reading, takes them for anyone's words); then
    the turns of the other branches, and their files, marked alternate."""

    def labelled(turn: Turn) -> Turn:
        return Turn(owner if turn.role == "user" else assistant, turn.role, turn.text, turn.spoken_at)

    turns = [labelled(t) for t in conversation.turns]
    by_turn: dict[int, list[claude.AttachmentText]] = {}
    for attachment in conversation.attachments:
        by_turn.setdefault(attachment.after_turn, []).append(attachment)

    def attached(after_turn: int) -> list[ChunkDraft]:
        return [
            ChunkDraft(piece, attachment_speaker(a.name))
            for a in by_turn.get(after_turn, []) for piece in split_long(a.text)
        ]

    drafts = attached(0)
    for number, turn in enumerate(turns, start=1):
        drafts += [ChunkDraft(piece, turn.speaker, turn.role, number, turn.spoken_at) for piece in split_long(turn.text)]
        drafts += attached(number)
    for alternate in conversation.alternate_turns:
        turn = labelled(alternate.turn)
        drafts += [
            ChunkDraft(piece, turn.speaker, turn.role, alternate.number, turn.spoken_at, ChunkBranch.ALTERNATE)
            for piece in split_long(turn.text)
        ]
    drafts += [
        ChunkDraft(piece, attachment_speaker(a.name), branch=ChunkBranch.ALTERNATE)
        for a in _alternate_files(conversation) for piece in split_long(a.text)
    ]
    return turns, drafts


def claude_conversation_import(
    conversation: claude.ClaudeConversation, *, source_name: str, summary: ImportSummary, collection: str,
    owner: str, assistant: str,
) -> int | None:
    """Store one conversation as a document unless it is already archived; the new document's id, else None."""
    digest = _claude_identity(conversation)
    if ArchiveDocument.objects.filter(content_sha256=digest).exists():
        summary.duplicates += 1
        return None
    turns, drafts = _claude_drafts(conversation, owner=owner, assistant=assistant)
    title = conversation.title or "Untitled Claude.ai conversation"
    dates = [d.strftime("%Y-%m-%d %H:%M UTC") for d in (conversation.created_at, conversation.updated_at) if d]
    header = ["Imported from a Claude.ai export" + (f" · {' → '.join(dict.fromkeys(dates))}" if dates else "")]
    if conversation.attachments:
        names = ", ".join(dict.fromkeys(a.name for a in conversation.attachments))
        header.append(f"Attached files (their text is kept apart from the turns): {names}")
    result = _store(
        digest=digest, title=title, collection=collection, source=DocumentSource.CLAUDE, source_name=source_name,
        text=render_turns(title, turns, header_lines=header), drafts=drafts,
        metadata={
            "claude_conversation_uuid": conversation.external_id,
            "created_at": conversation.created_at.isoformat() if conversation.created_at else None,
            "updated_at": conversation.updated_at.isoformat() if conversation.updated_at else None,
        },
    )
    if result.duplicate:  # a concurrent import stored it first
        summary.duplicates += 1
        return None
    summary.conversations += 1
    summary.messages += len(conversation.turns)
    summary.alternate_messages += len(conversation.alternate_turns)
    for note in conversation.notes:  # imported whole, read with a fallback: named, not skipped
        summary.problem(ConversationProblem(conversation.index, conversation.file, conversation.title, note),
                        skipped=False)
    return result.document.pk


def project_doc_speaker(name: str) -> str:
    """The label of a project document's text: the file speaks, never the owner."""
    return f"Project file: {name}"


PROJECT_DESCRIPTION_SPEAKER = "Project description"


def _claude_project_identity(project: claude.ClaudeProject) -> str:
    return sha256_hex(json.dumps(
        ["claude-project", project.external_id, project.name, project.description,
         [[doc.name, doc.text] for doc in project.docs]],
        ensure_ascii=False,
    ))


def claude_project_import(
    project: claude.ClaudeProject, *, source_name: str, summary: ImportSummary, collection: str,
) -> int | None:
    """Store a project's description and documents as one document of labelled chunks (no turn, no role:
    archive material, never anyone's words) unless it is archived already; the new document's id, else
    None (also for a project with nothing to keep). Its prompt template is never stored: the import offers
    it for Settings."""
    assert isinstance(summary, ClaudeImportSummary)
    drafts = [ChunkDraft(piece, PROJECT_DESCRIPTION_SPEAKER) for piece in split_long(project.description)]
    drafts += [ChunkDraft(piece, project_doc_speaker(doc.name)) for doc in project.docs for piece in split_long(doc.text)]
    if not drafts:
        return None
    digest = _claude_project_identity(project)
    if ArchiveDocument.objects.filter(content_sha256=digest).exists():
        summary.duplicates += 1
        return None
    title = f"Project: {project.name}" if project.name else "Untitled Claude.ai project"
    dates = [d.strftime("%Y-%m-%d %H:%M UTC") for d in (project.created_at, project.updated_at) if d]
    lines = [f"# {title}", "", "A project from a Claude.ai export" + (
        f" · {' → '.join(dict.fromkeys(dates))}" if dates else "")]
    if project.docs:
        lines.append("Project files (their text is kept as chunks under each file's name): "
                     + ", ".join(doc.name for doc in project.docs))
    result = _store(
        digest=digest, title=title, collection=collection, source=DocumentSource.CLAUDE, source_name=source_name,
        text="\n".join(lines) + "\n", drafts=drafts,
        metadata={
            "claude_project_uuid": project.external_id,
            "created_at": project.created_at.isoformat() if project.created_at else None,
            "updated_at": project.updated_at.isoformat() if project.updated_at else None,
            "docs": [{"uuid": doc.external_id, "filename": doc.name,
                      "created_at": doc.created_at.isoformat() if doc.created_at else None} for doc in project.docs],
        },
    )
    if result.duplicate:  # a concurrent import stored it first
        summary.duplicates += 1
        return None
    summary.projects += 1
    return result.document.pk


def claude_memory_suggestions(data: bytes) -> list[dict]:
    """What `memories.json` offers the memory import, less what the memories already hold word for word;
    claude.UnreadableMemories saying why it cannot be read."""
    try:
        value = json_load_checked(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise claude.UnreadableMemories(f"{claude.MEMORIES_MEMBER} is not UTF-8 text") from exc
    except InvalidInput as exc:
        raise claude.UnreadableMemories(f"{claude.MEMORIES_MEMBER}: {exc.detail}") from exc
    if not importing.claude_memories_shaped(value):
        raise claude.UnreadableMemories(
            f"{claude.MEMORIES_MEMBER} holds no conversations_memory or project_memories"
        )
    try:
        drafts = importing.drafts_from_items(value)
    except InvalidInput as exc:
        if exc.code == "empty_import":
            return []
        raise claude.UnreadableMemories(f"{claude.MEMORIES_MEMBER}: {exc.detail}") from exc
    held = set(Memory.objects.filter(text__in=[d.text for d in drafts]).values_list("text", flat=True))
    offered = {d.text: d for d in drafts if d.text not in held}
    return [{"text": d.text, "category": d.category} for d in offered.values()]


def _claude_export_files(file: ImportFile, stack: contextlib.ExitStack) -> chatgpt.ExportFiles:
    """The upload's conversation files (the zip's members, or the file itself), open until `stack` closes."""
    try:
        return stack.enter_context(chatgpt.export_files(file.stream, _export_limits(), file.name))
    except chatgpt.MalformedExport as exc:
        if exc.code != "missing_conversations_json":
            raise
        raise claude.MalformedClaudeExport(
            "The zip has no conversations.json; is it a Claude.ai data export?", code="missing_conversations_json"
        ) from exc


def claude_memories_offer(export: chatgpt.ExportFiles, summary: ImportSummary) -> None:
    """Add what the export's `memories.json` offers to the summary's suggestions (each text once), or say
    why it cannot be read."""
    assert isinstance(summary, ClaudeImportSummary)
    try:
        data = claude.memories_member_bytes(export, importing.IMPORT_FILE_MAX_BYTES)
        offered = claude_memory_suggestions(data) if data is not None else []
    except claude.UnreadableMemories as exc:
        summary.memories_problem = exc.reason
        return
    held = {s["text"] for s in summary.memory_suggestions}
    summary.memory_suggestions += [s for s in offered if s["text"] not in held]


def claude_reader(*, collection: object, assistant_name: str = "") -> ImportReader:
    """The Claude.ai importer for `import_runs`: each file (the export zip or its conversations.json) read
    as a stream, one conversation at a time, each storing itself; the zip's memories.json is an offer."""
    collection = clean_collection(collection)
    row = assistant_settings_get()
    owner, assistant = row.owner_name, imported_assistant_name(DocumentSource.CLAUDE, assistant_name)

    def read(files: Sequence[ImportFile], stack: contextlib.ExitStack) -> Iterator[
        ReadConversation | ConversationProblem | ReadOffer
    ]:
        next_index = 0
        for file in files:
            export = _claude_export_files(file, stack)
            for name in export.json_names:
                with export.open_json(name) as stream:
                    next_index = yield from _items_read(
                        claude.parse_conversations(stream, file=name, first_index=next_index),
                        next_index,
                        store=lambda item, export=export: functools.partial(
                            _claude_store, item, source_name=export.name, collection=collection, owner=owner,
                            assistant=assistant,
                        ),
                    )
            next_index = yield from _items_read(
                _claude_projects(export, next_index),
                next_index,
                store=lambda item, export=export: functools.partial(
                    _claude_project_store, item, source_name=export.name, collection=collection
                ),
                instructions=lambda item: item.prompt_template,
            )
            yield ReadOffer(functools.partial(claude_memories_offer, export))

    return read


def _claude_store(
    conversation: claude.ClaudeConversation, summary: ImportSummary, *, source_name: str, collection: str,
    owner: str, assistant: str,
) -> int | None:
    # Looked up when called, so the store step is the one place an import stores a conversation.
    return claude_conversation_import(
        conversation, source_name=source_name, summary=summary, collection=collection, owner=owner,
        assistant=assistant,
    )


def _claude_projects(export: chatgpt.ExportFiles, first_index: int) -> Iterator[
    claude.ClaudeProject | ConversationProblem
]:
    """The projects of the zip's projects.json, numbered from `first_index`; a projects.json that cannot be
    read (encrypted, too large, damaged) is a problem at the point it stopped, never a refusal."""
    index = first_index
    try:
        with export.open_other(claude.PROJECTS_MEMBER) as stream:
            if stream is None:
                return
            for item in claude.parse_projects(stream, first_index=first_index):
                index = item.index + 1
                yield item
    except ServiceError as exc:
        yield ConversationProblem(index, claude.PROJECTS_MEMBER, "", f"{claude.PROJECTS_MEMBER}: {exc.detail}")
    except chatgpt.UnreadableConversation as exc:
        yield ConversationProblem(index, claude.PROJECTS_MEMBER, "", exc.reason)


def _claude_project_store(
    project: claude.ClaudeProject, summary: ImportSummary, *, source_name: str, collection: str
) -> int | None:
    return claude_project_import(project, source_name=source_name, summary=summary, collection=collection)


CLAUDE_MISSING_FILE = "Attach conversations.json or the Claude.ai export zip."


def archive_claude_import(
    *, uploads: Sequence[UploadedFile], collection: object = ArchiveCollection.CONVERSATIONS,
    assistant_name: str = "",
) -> ClaudeImportSummary:
    """Import every conversation of a Claude.ai export (the zip or its conversations.json), and read the
    memories it carries as suggestions (nothing is added to the memories here).

    Every file is read through once before anything is stored, so a damaged file or one that is not an
    export stores nothing; a conversation that cannot be read, or has nothing said, is skipped and named.
    Both passes stream, and each conversation is stored before the next is read: memory is bounded by the
    largest conversation, not the export."""
    with contextlib.ExitStack() as stack:
        for upload in uploads:
            if upload is not None:
                stack.enter_context(closing_upload(upload))
        reader = claude_reader(collection=collection, assistant_name=assistant_name)
        files = [ImportFile(u.name or "", u, u.size) for u in import_files_check(uploads, CLAUDE_MISSING_FILE)]
        summary = import_run(reader, files, suggestion=custom_instructions_suggestion,
                             summary_type=ClaudeImportSummary)
    assert isinstance(summary, ClaudeImportSummary)
    return summary
