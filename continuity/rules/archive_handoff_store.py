"""The continuity slot of a chat continued from an archived conversation (issue 21): the bubble's
`source_document_id` and `source_turns` metadata, no row. The document's turns go through the same
policy (`continuity.rules.handoff_policy`) as a conversation's and render into the same slot.

The turns themselves are the archive's rows, read by the archive's reader (`ArchivedTurnsReader`), which
the app that owns the documents registers at start (`archived_turns_reader_register`): this package keeps
the policy and the bubbles, and imports nothing of `archive`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from uuid import UUID

from django.core.exceptions import ImproperlyConfigured
from django.db.models import QuerySet

from continuity.rules.handoff_policy import SourceMessage, boundary_id_in, build_handoff, new_boundary_id
from continuity.rules.handoff_store import handoff_limits, speaker_names, stored_prompts_read
from elion.models import AssistantSettings
from transcript.models import Message, MessageKind

# The archive's reader: for each document id, the turn numbers wanted; answers each document still in the
# archive with those turns as source messages (ids `<document id>:<turn>`), and leaves a removed one out.
ArchivedTurnsReader = Callable[[dict[int, set[int]]], dict[int, list[SourceMessage]]]

_READERS: dict[str, ArchivedTurnsReader] = {}


def archived_turns_reader_register(reader: ArchivedTurnsReader) -> None:
    """Set the reader of archived turns (once, at start, by the app that owns the documents)."""
    _READERS["archived_turns"] = reader


def _archived_turns(wanted: dict[int, set[int]]) -> dict[int, list[SourceMessage]]:
    reader = _READERS.get("archived_turns")
    if reader is None:
        raise ImproperlyConfigured(
            "No reader of archived turns is registered: the archive app registers it when Django starts."
        )
    return reader(wanted)


# --- An archived conversation continued in a new chat ---------------------------


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
    # Read unordered and put in seq order here: ordered by seq, SQLite without planner statistics walks each
    # whole thread by (conversation, seq) rather than sort the few rows the partial handoff index finds.
    rows = Message.objects.filter(
        conversation_id__in=conversation_ids, kind=MessageKind.HANDOFF_ARTIFACT, metadata__has_key="source_document_id"
    ).order_by()
    read = rows.values_list("seq", "conversation_id", "conversation__persona", "metadata")
    in_seq_order = sorted(read, key=lambda row: row[0])
    bubbles = [row[1:] for row in in_seq_order]
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
    if stored_prompts is None:
        stored_prompts = stored_prompts_read(list(dict.fromkeys(row[0] for row in bubbles)))
    carried = {
        conversation_id: (metadata.get("source_document_id"), {t for t in metadata.get("source_turns") or [] if isinstance(t, int)})
        for conversation_id, _, metadata in bubbles
    }
    wanted: dict[int, set[int]] = {document_id: set() for document_id, _ in carried.values() if isinstance(document_id, int)}
    for document_id, turns in carried.values():
        if document_id in wanted:
            wanted[document_id] |= turns
    sources = _archived_turns(wanted)
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
