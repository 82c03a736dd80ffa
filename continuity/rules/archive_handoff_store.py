"""The database side of an archived conversation continued in a new chat (issue 21): the bubble's
`source_document_id` and `source_turns` metadata, no row. The document's turns go through the same
policy (`continuity.rules.handoff_policy`) as a conversation's and render into the same slot."""

from __future__ import annotations

from collections.abc import Iterable
from uuid import UUID

from django.db.models import QuerySet

from archive.models import IMPORTED_ASSISTANT_NAMES, ArchiveChunk, ArchiveDocument, ChunkBranch
from continuity.rules.handoff_policy import Handoff, SourceMessage, boundary_id_in, build_handoff, new_boundary_id
from continuity.rules.handoff_store import handoff_limits, speaker_names, stored_prompts_read
from elion.models import AssistantSettings
from transcript.models import Message, MessageKind

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


def archive_handoff_blocks_for(
    conversation_ids: Iterable[UUID] | QuerySet,
    *,
    settings_row: AssistantSettings,
    stored_prompts: dict[UUID, str] | None = None,
) -> dict[UUID, str]:
    """The continuity slot of each conversation continued from an archive document.

    Rebuilt from the turns its bubble recorded, under the current limits (as
    `handoff_blocks_for` rebuilds a row); nothing when the document was
    removed from the archive. The owner asked for this history by continuing
    the document, so it enters only this conversation's prompt. The stored
    prompt's boundary id is kept while the content does not contain it.
    """
    bubbles = list(
        Message.objects.filter(
            conversation_id__in=conversation_ids, kind=MessageKind.HANDOFF_ARTIFACT, metadata__has_key="source_document_id"
        ).values_list("conversation_id", "conversation__persona", "metadata")
    )
    return archive_handoff_blocks_from(bubbles, settings_row=settings_row, stored_prompts=stored_prompts)


def archive_handoff_blocks_from(
    bubbles: list[tuple[UUID, str, dict]],
    *,
    settings_row: AssistantSettings,
    stored_prompts: dict[UUID, str] | None = None,
) -> dict[UUID, str]:
    """`archive_handoff_blocks_for` over bubbles already read: `(conversation id, persona, metadata)` of each
    handoff bubble recording a `source_document_id`, in seq order. `stored_prompts` as `handoff_blocks_from`."""
    if not bubbles:
        return {}
    documents = ArchiveDocument.objects.defer("text").in_bulk(
        {metadata.get("source_document_id") for _, _, metadata in bubbles if isinstance(metadata.get("source_document_id"), int)}
    )
    if stored_prompts is None:
        stored_prompts = stored_prompts_read(list(dict.fromkeys(row[0] for row in bubbles)))
    carried = {
        conversation_id: (metadata.get("source_document_id"), {t for t in metadata.get("source_turns") or [] if isinstance(t, int)})
        for conversation_id, _, metadata in bubbles
    }
    wanted: dict[int, set[int]] = {document_id: set() for document_id in documents}
    for document_id, turns in carried.values():
        if document_id in wanted:
            wanted[document_id] |= turns
    sources = _archive_turns(documents, wanted) if documents else {}
    limits = handoff_limits()
    blocks: dict[UUID, str] = {}
    for conversation_id, persona, _ in bubbles:
        document_id, turns = carried[conversation_id]
        if document_id not in sources:
            continue  # removed from the archive: nothing to carry
        messages = [m for m in sources[document_id] if int(m.id.rsplit(":", 1)[1]) in turns]
        handoff = build_handoff(messages, limits=limits, names=speaker_names(persona, settings_row))
        if handoff.is_empty:
            continue
        boundary = boundary_id_in(stored_prompts.get(conversation_id, ""))
        if boundary is None or any(boundary in turn.message.content for turn in handoff.turns):
            boundary = new_boundary_id()
        blocks[conversation_id] = handoff.model_block(boundary)
    return blocks
