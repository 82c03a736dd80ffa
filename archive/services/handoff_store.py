"""The archive's side of an archived conversation continued in a new chat (issue 21): a document's speaker
turns as the handoff policy's plain source messages (`continuity.rules.handoff_policy`), read from its stored
chunks. Continuity renders a continued chat's carried turns into its continuity slot
(`continuity.rules.archive_handoff_store`) and reads them through `archived_turns`, the reader this app
registers at start (`archive.apps.ArchiveConfig.ready`), so continuity imports nothing of archive."""

from __future__ import annotations

from archive.models import IMPORTED_ASSISTANT_NAMES, ArchiveChunk, ArchiveDocument, ChunkBranch
from continuity.rules.handoff_policy import Handoff, SourceMessage, build_handoff
from continuity.rules.handoff_store import handoff_limits, speaker_names
from elion.models import AssistantSettings

# Where a long archived turn's first piece occurs more than once, the occurrences tried.
ARCHIVE_TURN_SEARCH_ATTEMPTS = 20


# --- An archived conversation continued in a new chat ---------------------------


def _without_whitespace(text: str) -> str:
    return "".join(text.split())


def _archive_turn_text(pieces: list[ArchiveChunk], document_text: str) -> str:
    """A turn's exact text from its stored chunks.

    A turn above the chunk maximum was stored as several chunks cut at
    whitespace (or, with none, hard); its text is the stretch of the document
    from its first piece to the end of its last, so the boundaries come back
    as they were. A stretch is taken only when it differs from the pieces by
    whitespace alone; otherwise (text stored with other newlines) the pieces
    are joined by a blank line.
    """
    joined = "\n\n".join(piece.text for piece in pieces)
    if len(pieces) == 1:
        return joined
    bare = "".join(_without_whitespace(piece.text) for piece in pieces)
    start = document_text.find(pieces[0].text)
    for _attempt in range(ARCHIVE_TURN_SEARCH_ATTEMPTS):
        if start < 0:
            break
        end = start
        for piece in pieces:
            found = document_text.find(piece.text, end)
            end = found + len(piece.text) if found >= 0 else -1
            if end < 0:
                return joined
        if _without_whitespace(document_text[start:end]) == bare:
            return document_text[start:end]
        start = document_text.find(pieces[0].text, start + 1)
    return joined


def _imported_speaker(document: ArchiveDocument, chunk: ArchiveChunk) -> str:
    """Another system's assistant keeps its own name in a handoff ("ChatGPT said:"); the owner's turns and
    Elion's own documents keep the persona's labels (seed, "Archive Compatibility")."""
    if document.source in IMPORTED_ASSISTANT_NAMES and chunk.role == "assistant":
        return chunk.speaker or IMPORTED_ASSISTANT_NAMES[document.source]
    return ""


def _archive_turns(documents: dict[int, ArchiveDocument], turns: dict[int, set[int]] | None) -> dict[int, list[SourceMessage]]:
    """Per document, its speaker turns (all, or only `turns[document id]`) as plain source messages.

    One query for the chunks of every document, and one more only for the
    rare documents whose carried turns were stored as several chunks.
    """
    # Only the branch the owner last saw is the conversation; other branches' turns are searchable, never carried.
    chunks = ArchiveChunk.objects.filter(document_id__in=list(documents), turn__isnull=False, branch=ChunkBranch.CURRENT)
    if turns is not None:
        chunks = chunks.filter(turn__in=sorted(set().union(*turns.values())))
    grouped: dict[int, dict[int, list[ArchiveChunk]]] = {document_id: {} for document_id in documents}
    fields = ("document_id", "turn", "role", "speaker", "text", "spoken_at")
    for chunk in chunks.order_by("document_id", "position").only(*fields):
        if turns is None or chunk.turn in turns[chunk.document_id]:
            grouped[chunk.document_id].setdefault(chunk.turn, []).append(chunk)
    split = [document_id for document_id, by_turn in grouped.items() if any(len(p) > 1 for p in by_turn.values())]
    texts = dict(ArchiveDocument.objects.filter(pk__in=split).values_list("pk", "text")) if split else {}
    return {
        document_id: [
            SourceMessage(
                id=f"{document_id}:{turn}",
                role=pieces[0].role,
                content=_archive_turn_text(pieces, texts.get(document_id, "")),
                created_at=pieces[0].spoken_at or documents[document_id].created_at,
                speaker=_imported_speaker(documents[document_id], pieces[0]),
            )
            for turn, pieces in by_turn.items()
        ]
        for document_id, by_turn in grouped.items()
    }


def archived_turns(wanted: dict[int, set[int]]) -> dict[int, list[SourceMessage]]:
    """The carried turns of each document still in the archive: `wanted` maps a document id to the turn
    numbers a bubble recorded. A removed document is absent from the answer. One query for the documents,
    one for their chunks (none when no document is left), one more only for turns stored as several chunks."""
    documents = ArchiveDocument.objects.defer("text").in_bulk(list(wanted))
    if not documents:
        return {}
    return _archive_turns(documents, {document_id: wanted[document_id] for document_id in documents})


def archive_source_messages(document: ArchiveDocument) -> list[SourceMessage]:
    """The document's speaker turns as the policy's plain source messages, in order.

    One message per turn number, with the role its chunks were stored with (a
    speaker the archive could not place has none, so the policy never carries
    it); the time is the turn's own when the export gave one, else the
    document's. Ids are `<document id>:<turn>`.
    """
    return _archive_turns({document.pk: document}, None)[document.pk]


def archive_turn_numbers(handoff: Handoff) -> list[int]:
    """The turn numbers a handoff built from `archive_source_messages` carries."""
    return [int(message_id.rsplit(":", 1)[1]) for message_id in handoff.source_message_ids]


def archive_document_handoff(document: ArchiveDocument, *, persona: str, settings_row: AssistantSettings) -> Handoff:
    """The final-eight handoff of an archived conversation under the current limits and labels."""
    return build_handoff(
        archive_source_messages(document), limits=handoff_limits(), names=speaker_names(persona, settings_row)
    )
