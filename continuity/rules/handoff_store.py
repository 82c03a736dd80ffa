"""The database side of Layer 3: capture, store and re-render verbatim handoffs.

Two kinds of source: a conversation (New Chat continuity, Branch / Fresh Chat;
a `ThreadHandoff` row) and an archived conversation continued in a new chat
(issue 21; the bubble's `source_document_id` and `source_turns` metadata, no
row). Both go through the same policy and render into the same slot.

The policy itself is `continuity.rules.handoff_policy` (pure). This module reads
rows into its plain inputs, decides *which* source may feed a thread (through
`continuity.rules.eligibility`, the one place that rule lives), stores the result in
the `conversation_summaries` table (`ThreadHandoff`) and renders the static
prompt's continuity slot.

Only the `handoff` column and its provenance are read here; the retired
`summary` and `recent_raw` columns are deferred on every query so their text
cannot reach a prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from django.conf import settings
from django.db.models import Max, Q, QuerySet

from archive.models import IMPORTED_ASSISTANT_NAMES, ArchiveChunk, ArchiveDocument, ChunkBranch
from continuity.models import ThreadHandoff
from continuity.rules.eligibility import continuity_source_ids, continuity_sources
from continuity.rules.handoff_policy import (
    DEFAULT_PER_MESSAGE_CHARACTER_LIMIT,
    DEFAULT_TOTAL_CHARACTER_BUDGET,
    ELIGIBLE_KIND,
    ELIGIBLE_ROLES,
    INELIGIBLE_STATUSES,
    Handoff,
    HandoffLimits,
    SourceMessage,
    SpeakerNames,
    boundary_id_in,
    build_handoff,
    new_boundary_id,
    policy_marker,
)
from conversations.models import (
    AssistantSettings,
    Conversation,
    ConversationOrigin,
    Message,
    MessageKind,
    Persona,
    Role,
)
from transcript.assistant_settings import assistant_settings_read
from transcript.tree import live_branch

RETIRED_COLUMNS = ("summary", "recent_raw")
# Automatic selection walks at most this many candidates (most recent first)
# looking for one whose live branch has eligible speech.
CANDIDATE_LIMIT = 25
# Keeps every `IN (...)` list far below SQLite's bound-parameter ceiling.
CHUNK = 500
# Where a long archived turn's first piece occurs more than once, the occurrences tried.
ARCHIVE_TURN_SEARCH_ATTEMPTS = 20


# --- Inputs -----------------------------------------------------------------


def _positive_or(value: object, default: int) -> int:
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return default
    return number if number >= 1 else default


def handoff_limits() -> HandoffLimits:
    """The active limits. `elion.settings` already falls back on invalid env
    values; this guards overridden settings the same way (seed: invalid values
    never make New Chat or Branch creation fail)."""
    return HandoffLimits(
        per_message=_positive_or(settings.HANDOFF_PER_MESSAGE_CHARACTER_LIMIT, DEFAULT_PER_MESSAGE_CHARACTER_LIMIT),
        total_budget=_positive_or(settings.HANDOFF_TOTAL_CHARACTER_BUDGET, DEFAULT_TOTAL_CHARACTER_BUDGET),
    )


def current_policy_marker() -> str:
    return policy_marker(handoff_limits())


def speaker_names(persona: str, settings_row: AssistantSettings) -> SpeakerNames:
    """Speaker labels from the settings row the operation read."""
    return SpeakerNames(persona=persona, owner_name=settings_row.owner_name, display_name=settings_row.display_name)


def source_message(message: Message) -> SourceMessage:
    return SourceMessage(
        id=str(message.id),
        role=message.role,
        content=message.content,
        created_at=message.created_at,
        kind=message.kind,
        status=message.status,
    )


def live_branch_handoff(conversation: Conversation, *, settings_row: AssistantSettings) -> Handoff:
    """The final-eight handoff of `conversation`'s live branch under the current limits."""
    sources = [source_message(message) for message in live_branch(conversation)]
    return build_handoff(sources, limits=handoff_limits(), names=speaker_names(conversation.persona, settings_row))


def handoff_row_create(*, destination: Conversation, source: Conversation, handoff: Handoff) -> ThreadHandoff:
    """New rows store the exact exchange in `handoff`; the retired columns stay empty."""
    return ThreadHandoff.objects.create(
        destination=destination,
        source=source,
        source_message_ids=handoff.source_message_ids,
        handoff=handoff.exchange,
        policy_marker=policy_marker(handoff.limits),
    )


# --- Automatic New Chat continuity -----------------------------------------


@dataclass(frozen=True)
class PriorThreadCapture:
    source: Conversation
    handoff: Handoff


def prior_thread_select(*, persona: str) -> PriorThreadCapture | None:
    """The most recent eligible conversation with eligible speech, and its handoff.

    Database reads only. "Most recent" is the newest eligible user/assistant
    message, so renaming an old thread does not make it the prior thread.
    """
    eligible_speech = Q(messages__role__in=ELIGIBLE_ROLES, messages__kind=ELIGIBLE_KIND) & ~Q(
        messages__status__in=INELIGIBLE_STATUSES
    )
    candidates = (
        continuity_sources(persona=persona)
        .annotate(last_spoken=Max("messages__created_at", filter=eligible_speech))
        .filter(last_spoken__isnull=False)
        .order_by("-last_spoken", "-created_at")
    )
    # Read, never create, the settings row: capture is database reads only.
    settings_row = assistant_settings_read()
    for conversation in candidates[:CANDIDATE_LIMIT]:
        # The live branch decides: speech only on a rewound-away branch does not count.
        handoff = live_branch_handoff(conversation, settings_row=settings_row)
        if not handoff.is_empty:
            return PriorThreadCapture(source=conversation, handoff=handoff)
    return None


def new_chat_handoff_capture(*, persona: str, origin: str, private: bool = False) -> PriorThreadCapture | None:
    """Automatic New Chat continuity, capture step (database reads only).

    Elion New Chats only: Clipboard never uses automatic prior-thread
    selection, Branch / Fresh Chat carries its own explicit handoff, and a
    private chat is born outside automatic continuity (it receives none).
    """
    if persona != Persona.ELION or origin != ConversationOrigin.NEW_CHAT or private:
        return None
    return prior_thread_select(persona=persona)


def new_chat_handoff_store(capture: PriorThreadCapture | None, *, destination: Conversation) -> ThreadHandoff | None:
    """Store a capture for its new conversation.

    Precondition: runs in the transaction that creates `destination`, so a
    failure here leaves no conversation behind.
    """
    if capture is None:
        return None
    return handoff_row_create(destination=destination, source=capture.source, handoff=capture.handoff)


# --- Injection into the static prompt --------------------------------------


def _chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _live_branch_ids(heads: dict[UUID, UUID | None]) -> dict[UUID, set[UUID]]:
    """Per source conversation, the ids on its live branch (ids only, no content)."""
    parents: dict[UUID, dict[UUID, UUID | None]] = {source_id: {} for source_id in heads}
    for part in _chunks(list(heads)):
        rows = (
            Message.objects.filter(conversation_id__in=part)
            .exclude(role=Role.SYSTEM)
            .values_list("conversation_id", "id", "parent_id")
        )
        for conversation_id, message_id, parent_id in rows:
            parents[conversation_id][message_id] = parent_id
    branches: dict[UUID, set[UUID]] = {}
    for source_id, head_id in heads.items():
        tree, seen, current = parents[source_id], set(), head_id
        while current is not None and current in tree and current not in seen:
            seen.add(current)
            current = tree[current]
        branches[source_id] = seen
    return branches


def _as_uuid(value: object) -> UUID | None:
    try:
        return UUID(str(value))
    except (TypeError, ValueError):
        return None


def _stored_prompts(conversation_ids: list[UUID]) -> dict[UUID, str]:
    """The stored prompt of each of these conversations that has one, by conversation."""
    stored: dict[UUID, str] = {}
    for part in _chunks(conversation_ids):
        stored.update(
            Message.objects.filter(conversation_id__in=part, role=Role.SYSTEM).values_list("conversation_id", "content")
        )
    return stored


def handoff_blocks_for(conversation_ids: Iterable[UUID] | QuerySet, *, settings_row: AssistantSettings) -> dict[UUID, str]:
    """The rendered continuity slot of each conversation that has a handoff.

    `conversation_ids` is a list of ids or a `values("pk")` queryset;
    `settings_row` is the AssistantSettings row the operation read. A
    conversation is left out (so its slot stays empty) when its row has no
    verbatim handoff (a retired summary-only row), when its source may not
    feed automatic continuity now (hidden, trashed, shielded, other persona),
    or when none of the captured source messages is still eligible.

    Every row is rebuilt from its captured source messages that are still
    eligible and still on the source's live branch, under the current limits,
    so an older oversized row or a larger past configuration cannot bypass the
    active budget; a row whose text changed is written back. A stored prompt's
    boundary id is kept while the rebuilt content does not contain it, so
    rebuilding an unchanged prompt gives identical text. A fixed number of
    queries, however many conversations are in scope.
    """
    rows = (
        ThreadHandoff.objects.filter(destination_id__in=conversation_ids, source__isnull=False)
        .exclude(handoff="")
        .defer(*RETIRED_COLUMNS)
        .select_related("destination", "source")
    )
    return handoff_blocks_from(rows, settings_row=settings_row)


def handoff_blocks_from(
    rows: Iterable[ThreadHandoff], *, settings_row: AssistantSettings, stored_prompts: dict[UUID, str] | None = None
) -> dict[UUID, str]:
    """`handoff_blocks_for` over handoff rows naming a source (each with its destination and source
    conversations, its retired columns deferred), read by the caller. `stored_prompts`: the
    destinations' stored prompts by conversation, when the caller holds them (a send: its own, or none yet);
    otherwise they are read."""
    rows = [row for row in rows if row.handoff.strip()]
    if not rows:
        return {}

    eligible: set[UUID] = set()
    for persona in {row.destination.persona for row in rows}:
        source_ids = list({row.source_id for row in rows if row.destination.persona == persona})
        for part in _chunks(source_ids):
            eligible |= continuity_source_ids(part, persona=persona)
    rows = [row for row in rows if row.source_id in eligible]
    if not rows:
        return {}

    on_live_branch = _live_branch_ids({row.source_id: row.source.head_id for row in rows})
    wanted = {
        message_id
        for row in rows
        for message_id in map(_as_uuid, row.source_message_ids or [])
        if message_id is not None and message_id in on_live_branch[row.source_id]
    }
    messages: dict[UUID, Message] = {}
    for part in _chunks(list(wanted)):
        messages.update((message.id, message) for message in Message.objects.filter(pk__in=part))

    if stored_prompts is None:
        stored_prompts = _stored_prompts([row.destination_id for row in rows])

    limits = handoff_limits()
    marker = policy_marker(limits)
    names = {persona: speaker_names(persona, settings_row) for persona in {row.destination.persona for row in rows}}
    blocks: dict[UUID, str] = {}
    changed: list[ThreadHandoff] = []
    for row in rows:
        captured = [
            messages[message_id]
            for message_id in map(_as_uuid, row.source_message_ids or [])
            if message_id in messages and messages[message_id].conversation_id == row.source_id
        ]
        captured.sort(key=lambda message: message.seq)
        handoff = build_handoff(
            [source_message(message) for message in captured], limits=limits, names=names[row.destination.persona]
        )
        if handoff.is_empty:
            continue
        boundary = boundary_id_in(stored_prompts.get(row.destination_id, ""))
        if boundary is None or any(boundary in turn.message.content for turn in handoff.turns):
            boundary = new_boundary_id()
        blocks[row.destination_id] = handoff.model_block(boundary)
        if row.handoff != handoff.exchange or row.policy_marker != marker:
            row.handoff, row.policy_marker = handoff.exchange, marker
            changed.append(row)
    if changed:
        ThreadHandoff.objects.bulk_update(changed, ["handoff", "policy_marker"], batch_size=CHUNK)
    return blocks


def handoff_block_for(conversation: Conversation) -> str:
    """The continuity slot for one conversation ("" when it has none)."""
    ids = [conversation.pk]
    settings_row = assistant_settings_read()
    blocks = {**archive_handoff_blocks_for(ids, settings_row=settings_row), **handoff_blocks_for(ids, settings_row=settings_row)}
    return blocks.get(conversation.pk, "")


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
    conversation_ids: Iterable[UUID] | QuerySet, *, settings_row: AssistantSettings
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
    return archive_handoff_blocks_from(bubbles, settings_row=settings_row)


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
        stored_prompts = _stored_prompts(list(dict.fromkeys(row[0] for row in bubbles)))
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


# --- One conversation's handoffs, as a send reads them ------------------------


@dataclass(frozen=True)
class ThreadHandoffs:
    """One conversation's handoffs: its handoff row naming a source (New Chat continuity, Branch / Fresh
    Chat), if any, and its handoff bubbles (Branch / Fresh Chat, an archived conversation continued), in seq
    order. Read once by a send that builds its stored prompt or may recall (`thread_handoffs_read`)."""

    conversation: Conversation
    rows: tuple[ThreadHandoff, ...]
    bubbles: tuple[Message, ...]

    def blocks(self, *, settings_row: AssistantSettings, stored_prompt: str) -> dict[UUID, str]:
        """The conversation's rendered continuity slot (as `handoff_blocks_for` and
        `archive_handoff_blocks_for` render it), given its stored prompt ("" when it has none yet)."""
        stored_prompts = {self.conversation.pk: stored_prompt}
        archived = [
            (self.conversation.pk, self.conversation.persona, bubble.metadata)
            for bubble in self.bubbles
            if isinstance(bubble.metadata, dict) and "source_document_id" in bubble.metadata
        ]
        return {
            **archive_handoff_blocks_from(archived, settings_row=settings_row, stored_prompts=stored_prompts),
            **handoff_blocks_from(self.rows, settings_row=settings_row, stored_prompts=stored_prompts),
        }

    def source_ids(self) -> set[UUID]:
        """The conversations these handoffs came from (automatic recall never searches them): each row's
        source and each bubble's recorded `source_conversation_id`."""
        sources = {row.source_id for row in self.rows}
        for bubble in self.bubbles:
            recorded = _as_uuid(bubble.metadata.get("source_conversation_id")) if isinstance(bubble.metadata, dict) else None
            if recorded is not None:
                sources.add(recorded)
        return sources


def thread_handoffs_read(conversation: Conversation, messages: Iterable[Message]) -> ThreadHandoffs:
    """`conversation`'s handoffs in one query (its handoff row); the bubbles are picked from `messages`,
    every row of the conversation the caller read (a send's, under its lock)."""
    rows = tuple(
        ThreadHandoff.objects.filter(destination_id=conversation.pk, source__isnull=False)
        .defer(*RETIRED_COLUMNS)
        .select_related("source")  # its destination is `conversation`, not joined again
    )
    for row in rows:
        row.destination = conversation
    bubbles = sorted((m for m in messages if m.kind == MessageKind.HANDOFF_ARTIFACT), key=lambda m: m.seq)
    return ThreadHandoffs(conversation=conversation, rows=rows, bubbles=tuple(bubbles))


def thread_handoff_source_ids(conversation: Conversation) -> set[UUID]:
    """`ThreadHandoffs.source_ids` for a caller that holds none of the conversation's rows (a send reads its
    handoffs from its own rows, `request_store.send_inputs_read`): its handoff row and its handoff bubbles, two
    queries."""
    bubbles = Message.objects.filter(conversation=conversation, kind=MessageKind.HANDOFF_ARTIFACT).only(
        "id", "conversation_id", "kind", "seq", "metadata"
    )
    return thread_handoffs_read(conversation, bubbles).source_ids()


def handoff_destinations(source_ids: Iterable[UUID]) -> list[UUID]:
    """Conversations whose handoff came from any of `source_ids`: the prompts a
    visibility change of those sources must rebuild."""
    return list(
        ThreadHandoff.objects.filter(source_id__in=source_ids).values_list("destination_id", flat=True).distinct()
    )
