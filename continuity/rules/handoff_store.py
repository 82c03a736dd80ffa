"""The database side of Layer 3: capture, store and re-render verbatim handoffs.

Two kinds of source: a conversation (New Chat continuity, Branch / Fresh Chat;
a `ThreadHandoff` row), here, and an archived conversation continued in a new
chat (issue 21; the bubble's `source_document_id` and `source_turns` metadata,
no row), in `continuity.rules.archive_handoff_store`. Both go through the same
policy and render into the same slot; `continuity.rules.thread_handoff_store`
reads one conversation's handoffs of both kinds as a send uses them.

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
from django.db.models import OuterRef, QuerySet, Subquery

from continuity.models import ThreadHandoff
from continuity.rules.eligibility import continuity_source_ids, continuity_sources
from continuity.rules.handoff_liveness import SourceWalk, live_ids_by_source
from continuity.rules.handoff_policy import (
    DEFAULT_PER_MESSAGE_CHARACTER_LIMIT,
    DEFAULT_TOTAL_CHARACTER_BUDGET,
    ELIGIBLE_KIND,
    ELIGIBLE_ROLES,
    FINAL_MESSAGE_COUNT,
    INELIGIBLE_STATUSES,
    Handoff,
    HandoffLimits,
    SourceMessage,
    SpeakerNames,
    boundary_id_in,
    build_handoff,
    is_eligible,
    new_boundary_id,
    policy_marker,
)
from elion.base.assistant_settings import assistant_settings_read
from elion.models import AssistantSettings
from transcript.branch_rows import StretchMessage, branch_stretch_up
from transcript.models import Conversation, ConversationOrigin, Message, Persona, Role
from transcript.tree import BrokenTree

RETIRED_COLUMNS = ("summary", "recent_raw")
# Automatic selection walks at most this many candidates (most recent first)
# looking for one whose live branch has eligible speech.
CANDIDATE_LIMIT = 25
# Conversations read per page while looking for the most recent speakers (`recent_speakers`).
SPEAKER_PAGE = 50
# Keeps every `IN (...)` list far below SQLite's bound-parameter ceiling.
CHUNK = 500


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


def source_message(message: Message | StretchMessage) -> SourceMessage:
    return SourceMessage(
        id=str(message.id),
        role=message.role,
        content=message.content,
        created_at=message.created_at,
        kind=message.kind,
        status=message.status,
    )


# The newest live-branch messages a handoff reads first; four times as many while they hold fewer than the
# final eight eligible ones and the root is not reached.
HANDOFF_TAIL_ROWS = 64


def live_branch_handoff(conversation: Conversation, *, settings_row: AssistantSettings) -> Handoff:
    """The final-eight handoff of `conversation`'s live branch under the current limits, read from the newest
    end of the branch only as far as its final eight eligible messages (`transcript.branch_rows`), never the
    whole thread. `BrokenTree` for a break among the messages read."""
    sources = _final_sources(conversation)
    return build_handoff(sources, limits=handoff_limits(), names=speaker_names(conversation.persona, settings_row))


def _final_sources(conversation: Conversation) -> list[SourceMessage]:
    if conversation.head_id is None:
        return []
    rows = HANDOFF_TAIL_ROWS
    while True:
        tail = branch_stretch_up(conversation.id, conversation.head_id, token_floor=-1, max_rows=rows, with_times=True)
        sources = [source_message(message) for message in tail if message.role != Role.SYSTEM]
        if len(tail) < rows or tail[0].parent_id is None or sum(map(is_eligible, sources)) >= FINAL_MESSAGE_COUNT:
            return sources
        rows *= 4


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
    message, so renaming an old thread does not make it the prior thread; a thread
    whose stored tree is broken is passed over.
    """
    # Read, never create, the settings row: capture is database reads only.
    settings_row = assistant_settings_read()
    for conversation in recent_speakers(persona=persona):
        # The live branch decides: speech only on a rewound-away branch does not count, and a thread whose
        # tree is broken (`BrokenTree`) has no live branch to read, so it is passed over like an empty one
        # (a New Chat is never refused for another thread's broken tree; check_transcripts reports it).
        try:
            handoff = live_branch_handoff(conversation, settings_row=settings_row)
        except BrokenTree:
            continue
        if not handoff.is_empty:
            return PriorThreadCapture(source=conversation, handoff=handoff)
    return None


def recent_speakers(*, persona: str, limit: int = CANDIDATE_LIMIT) -> list[Conversation]:
    """Up to `limit` eligible conversations with eligible speech, the newest eligible message first
    (`last_spoken`), then the newest conversation.

    Bounded by the owner's recent conversations, not by all of them: each one's newest eligible message is
    one probe down its (conversation, seq) index, and conversations are read in pages newest change first
    (`updated_at`, the `conv_persona_recent` index). A conversation's `updated_at` is never older than its
    newest message (every append that adds speech moves the head and saves it), so once the `limit`-th
    best speech is newer than the oldest change read so far, no conversation not yet read can enter.
    """
    eligible_speech = (
        Message.objects.filter(conversation=OuterRef("pk"), role__in=ELIGIBLE_ROLES, kind=ELIGIBLE_KIND)
        .exclude(status__in=INELIGIBLE_STATUSES)
        .order_by("-seq")
        .values("created_at")[:1]
    )
    candidates = (
        continuity_sources(persona=persona)
        .annotate(last_spoken=Subquery(eligible_speech))
        .order_by("-updated_at", "-pk")
    )
    found: list[Conversation] = []
    start = 0
    while True:
        page = list(candidates[start : start + SPEAKER_PAGE])
        found += [conversation for conversation in page if conversation.last_spoken is not None]
        found.sort(key=lambda c: (c.last_spoken, c.created_at), reverse=True)
        del found[limit:]
        if len(page) < SPEAKER_PAGE or (len(found) == limit and page[-1].updated_at < found[-1].last_spoken):
            return found
        start += SPEAKER_PAGE


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

# What a rebuild reads of a handoff row and its two conversations (`handoff_blocks_from`): never the retired
# columns, and of the conversations only what decides the rebuild.
HANDOFF_ROW_FIELDS = (
    "id", "destination_id", "source_id", "source_message_ids", "handoff", "policy_marker",
    "destination__id", "destination__persona", "source__id", "source__head_id",
)
# What a rebuild reads of a captured message: what `source_message` keeps, its place in the tree and on its
# branch (`_source_walks`), nothing else (its parts and metadata are never decoded).
CAPTURED_FIELDS = ("id", "conversation_id", "role", "content", "created_at", "kind", "status", "seq", "branch_depth")


def _chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _source_walks(rows: list[ThreadHandoff], captured: dict[UUID, Message]) -> dict[UUID, SourceWalk]:
    """Each source's liveness walk (`continuity.rules.handoff_liveness`): from its head down to its shallowest
    captured message still stored in it. A source with no head or none of its captured messages left has
    nothing live to find, and no walk."""
    floors: dict[UUID, int] = {}
    for row in rows:
        for message_id in map(uuid_or_none, row.source_message_ids or []):
            message = captured.get(message_id)
            if message is not None and message.conversation_id == row.source_id and message.role != Role.SYSTEM:
                floors[row.source_id] = min(floors.get(row.source_id, message.branch_depth), message.branch_depth)
    heads = {row.source_id: row.source.head_id for row in rows}
    return {
        source_id: SourceWalk(head_id=heads[source_id], depth_floor=floor)
        for source_id, floor in floors.items()
        if heads[source_id] is not None
    }


def uuid_or_none(value: object) -> UUID | None:
    """`value` as a UUID (a recorded id in a JSON field), or None when it is not one."""
    try:
        return UUID(str(value))
    except (TypeError, ValueError):
        return None


def stored_prompts_read(conversation_ids: list[UUID]) -> dict[UUID, str]:
    """The stored prompt of each of these conversations that has one, by conversation."""
    stored: dict[UUID, str] = {}
    for part in _chunks(conversation_ids):
        stored.update(
            Message.objects.filter(conversation_id__in=part, role=Role.SYSTEM).values_list("conversation_id", "content")
        )
    return stored


def handoff_blocks_for(
    conversation_ids: Iterable[UUID] | QuerySet,
    *,
    settings_row: AssistantSettings,
    stored_prompts: dict[UUID, str] | None = None,
) -> dict[UUID, str]:
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
    queries, however many conversations are in scope. `stored_prompts` as `handoff_blocks_from`.
    """
    rows = (
        ThreadHandoff.objects.filter(destination_id__in=conversation_ids, source__isnull=False)
        .exclude(handoff="")
        .select_related("destination", "source")
        .only(*HANDOFF_ROW_FIELDS)
    )
    return handoff_blocks_from(rows, settings_row=settings_row, stored_prompts=stored_prompts)


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

    captured_ids = {
        message_id
        for row in rows
        for message_id in map(uuid_or_none, row.source_message_ids or [])
        if message_id is not None
    }
    captured_rows: dict[UUID, Message] = {}
    for part in _chunks(list(captured_ids)):
        captured_rows.update((message.id, message) for message in Message.objects.filter(pk__in=part).only(*CAPTURED_FIELDS))
    on_live_branch = live_ids_by_source(_source_walks(rows, captured_rows))
    messages = {
        message_id: message
        for message_id, message in captured_rows.items()
        if message_id in on_live_branch.get(message.conversation_id, ())
    }

    if stored_prompts is None:
        stored_prompts = stored_prompts_read([row.destination_id for row in rows])

    limits = handoff_limits()
    marker = policy_marker(limits)
    names = {persona: speaker_names(persona, settings_row) for persona in {row.destination.persona for row in rows}}
    blocks: dict[UUID, str] = {}
    changed: list[ThreadHandoff] = []
    for row in rows:
        captured = [
            messages[message_id]
            for message_id in map(uuid_or_none, row.source_message_ids or [])
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


def handoff_destinations(source_ids: Iterable[UUID]) -> list[UUID]:
    """Conversations whose handoff came from any of `source_ids`: the prompts a
    visibility change of those sources must rebuild."""
    return list(
        ThreadHandoff.objects.filter(source_id__in=source_ids).values_list("destination_id", flat=True).distinct()
    )
