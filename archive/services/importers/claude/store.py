"""The Claude.ai export importer: conversations (with their attached files' text) and projects mapped onto
archive documents and stored, and what memories.json offers the memory import; the reader `import_runs`
runs, and the synchronous import."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from django.core.files.uploadedfile import UploadedFile

from archive.models import ArchiveCollection, ArchiveDocument, ChunkBranch, DocumentSource
from archive.services.documents import clean_collection, document_store
from archive.services.import_runs import (
    ImportFile,
    ImportReader,
    ImportSummary,
    ReadConversation,
    ReadOffer,
)
from archive.services.importers import export_reader
from archive.services.importers.claude import memories
from archive.services.importers.claude import parse as claude
from archive.services.importers.claude.messages import AttachmentText
from archive.services.importers.export_steps import (
    export_items_read,
    export_limits,
    imported_assistant_name,
    stored_conversation_counted,
    uploads_import,
)
from archive.services.parsing import ChunkDraft, ConversationProblem, Turn, render_turns, split_long
from elion.base.assistant_settings import assistant_settings_get
from elion.base.errors import ServiceError
from elion.base.uploads import sha256_hex
from memories.services import importing


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
            body["problems"].append({"index": None, "title": memories.MEMORIES_MEMBER, "reason": self.memories_problem,
                                     "file": memories.MEMORIES_MEMBER})
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


def _alternate_files(conversation: claude.ClaudeConversation) -> list[AttachmentText]:
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
    by_turn: dict[int, list[AttachmentText]] = {}
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
    result = document_store(
        digest=digest, title=title, collection=collection, source=DocumentSource.CLAUDE, source_name=source_name,
        text=render_turns(title, turns, header_lines=header), drafts=drafts,
        metadata={
            "claude_conversation_uuid": conversation.external_id,
            "created_at": conversation.created_at.isoformat() if conversation.created_at else None,
            "updated_at": conversation.updated_at.isoformat() if conversation.updated_at else None,
        },
    )
    if not stored_conversation_counted(summary, result, conversation):
        return None
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
    result = document_store(
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


def _claude_export_files(file: ImportFile, stack: contextlib.ExitStack) -> export_reader.ExportFiles:
    """The upload's conversation files (the zip's members, or the file itself), open until `stack` closes."""
    try:
        return stack.enter_context(export_reader.export_files(file.stream, export_limits(), file.name))
    except export_reader.MalformedExport as exc:
        if exc.code != "missing_conversations_json":
            raise
        raise claude.MalformedClaudeExport(
            "The zip has no conversations.json; is it a Claude.ai data export?", code="missing_conversations_json"
        ) from exc


def claude_memories_offer(export: export_reader.ExportFiles, summary: ImportSummary) -> None:
    """Add what the export's `memories.json` offers to the summary's suggestions (each text once), or say
    why it cannot be read."""
    assert isinstance(summary, ClaudeImportSummary)
    try:
        data = memories.memories_member_bytes(export, importing.IMPORT_FILE_MAX_BYTES)
        offered = memories.claude_memory_suggestions(data) if data is not None else []
    except memories.UnreadableMemories as exc:
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
                    next_index = yield from export_items_read(
                        claude.parse_conversations(stream, file=name, first_index=next_index),
                        next_index,
                        store=lambda item, export=export: functools.partial(
                            _claude_store, item, source_name=export.name, collection=collection, owner=owner,
                            assistant=assistant,
                        ),
                    )
            next_index = yield from export_items_read(
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


def _claude_projects(export: export_reader.ExportFiles, first_index: int) -> Iterator[
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
    except export_reader.UnreadableConversation as exc:
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
    """Import every conversation and project of a Claude.ai export (the zip or its conversations.json), as
    `export_steps.uploads_import` does, and read the memories it carries as suggestions (nothing is added
    to the memories here)."""
    summary = uploads_import(
        uploads, lambda: claude_reader(collection=collection, assistant_name=assistant_name),
        missing=CLAUDE_MISSING_FILE, summary_type=ClaudeImportSummary,
    )
    assert isinstance(summary, ClaudeImportSummary)
    return summary
