"""Storing, reusing and rebuilding the per-conversation static prompt.

One `role=system` message per conversation (a partial unique constraint makes
a second impossible). It is built on the first send from the already
persisted memory snapshot and reused afterwards. Source changes (settings,
an edited or deleted memory the thread holds, an explicit refresh, visibility
transitions) rebuild it eagerly through `static_prompts_rebuild`, inside the
transaction that made the change (a bounded scope: one thread, one batch), or
marks them stale there and rebuilds them in batches before the operation
returns (`continuity.rules.prompt_refresh`, every stored prompt or every holder
of a memory). A prompt whose policy markers are stale, or whose conversation
is marked stale (`StalePrompt`), is rebuilt on the next send before it can reach the
model.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from uuid import UUID

from django.db import connection
from django.db.models import QuerySet
from django.utils import timezone

from continuity.rules.archive_handoff_store import archive_handoff_blocks_for
from continuity.rules.handoff_store import handoff_blocks_for
from continuity.rules.policies import policy_markers
from continuity.rules.prompt_policy import (
    HANDOFF_SPAN_KEY,
    BuiltPrompt,
    PromptCharacter,
    PromptInputs,
    PromptMemory,
    PromptSettings,
    build_static_prompt,
    handoff_span,
)
from continuity.rules.thread_handoff_store import ThreadHandoffs
from elion.base.assistant_settings import assistant_settings_get
from elion.models import AssistantSettings, Character
from memories.models import Memory, MemoryCategory, SnapshotMembership
from transcript.append import TranscriptAppend, transcript_write
from transcript.models import Conversation, Message, MessageKind, Role, StalePrompt

__all__ = [
    "conversation_snapshot_memories",
    "markers_are_current",
    "policy_markers",
    "prompt_is_current",
    "prompt_inputs_for",
    "prompt_inputs_many",
    "static_prompt_ensure",
    "static_prompt_compose",
    "static_prompt_ready",
    "static_prompt_rewrite",
    "static_prompt_store",
    "static_prompts_rebuild",
    "prompt_rows_read",
    "prompt_rows_rebuilt",
    "prompt_rows_write",
]


def prompt_settings(row: AssistantSettings) -> PromptSettings:
    return PromptSettings(
        owner_name=row.owner_name,
        display_name=row.display_name,
        personality=row.personality,
        custom_instructions=row.custom_instructions,
        archive_access=row.archive_access,
        web_search=row.web_search,
        image_generation=row.image_generation,
    )


def _category_label(code: str) -> str:
    try:
        return MemoryCategory(code).label
    except ValueError:
        return code.replace("_", " ").title()


def _shown_members(conversation_ids: Iterable[UUID] | QuerySet) -> QuerySet[SnapshotMembership]:
    """The snapshot members a prompt shows: only the snapshot's ids count (a conversation without membership
    rows gets nothing, never "all memories"); inactive members are held but not shown; in global order."""
    return SnapshotMembership.objects.filter(conversation_id__in=conversation_ids, memory__active=True).order_by(
        "memory__position", "memory_id"
    )


def snapshot_memories(conversation_ids: Iterable[UUID] | QuerySet) -> dict[UUID, tuple[PromptMemory, ...]]:
    """Each conversation's snapshot members with their current text, in global order (`_shown_members`).

    Each memory's text is read once however many threads hold it (two queries).
    `conversation_ids` is a list of ids or a `values("pk")` queryset.
    """
    members = SnapshotMembership.objects.filter(conversation_id__in=conversation_ids)
    shared = {
        pk: PromptMemory(text, _category_label(category), importance)
        for pk, text, category, importance in Memory.objects.filter(
            active=True, pk__in=members.values("memory_id")
        ).values_list("pk", "text", "category", "importance")
    }
    result: dict[UUID, list[PromptMemory]] = {}
    for conversation_id, memory_id in _shown_members(conversation_ids).values_list("conversation_id", "memory_id"):
        memory = shared.get(memory_id)
        if memory is not None:
            result.setdefault(conversation_id, []).append(memory)
    return {key: tuple(value) for key, value in result.items()}


def conversation_snapshot_memories(conversation_id: UUID) -> tuple[PromptMemory, ...]:
    """One conversation's snapshot members with their current text, in global order, in one query."""
    return tuple(
        PromptMemory(text, _category_label(category), importance)
        for text, category, importance in _shown_members([conversation_id]).values_list(
            "memory__text", "memory__category", "memory__importance"
        )
    )


def saved_characters() -> tuple[PromptCharacter, ...]:
    """Character Studio's characters, by name (one query, whatever the thread count)."""
    return tuple(
        PromptCharacter(name=name, image_guidance=guidance)
        for name, guidance in Character.objects.order_by("name", "id").values_list("name", "image_guidance")
    )


def continuity_blocks(
    conversation_ids: Iterable[UUID] | QuerySet,
    settings_row: AssistantSettings,
    *,
    stored_prompts: dict[UUID, str] | None = None,
) -> dict[UUID, str]:
    """Rendered verbatim handoffs per conversation, rebuilt under the current limits: from a source
    conversation (a handoff row) or from an archived conversation continued in a new chat.
    `stored_prompts`: the conversations' stored prompts when the caller read them (else read here)."""
    return {
        **archive_handoff_blocks_for(conversation_ids, settings_row=settings_row, stored_prompts=stored_prompts),
        **handoff_blocks_for(conversation_ids, settings_row=settings_row, stored_prompts=stored_prompts),
    }


def prompt_inputs_many(
    conversations: Iterable[Conversation | tuple[UUID, str]],
    conversation_ids: Iterable[UUID] | QuerySet | None = None,
    *,
    settings_row: AssistantSettings,
    stored_prompts: dict[UUID, str] | None = None,
) -> dict[UUID, PromptInputs]:
    """Prompt inputs for many conversations with a fixed number of queries.

    `conversations` are Conversation rows or `(pk, persona)` pairs.
    `conversation_ids` may be a `values("pk")` queryset covering them, so no
    query carries one parameter per thread. `settings_row`: the
    AssistantSettings row the operation read; `stored_prompts` as `continuity_blocks`.
    """
    personas = dict(
        (item.pk, item.persona) if isinstance(item, Conversation) else tuple(item) for item in conversations
    )
    if conversation_ids is None:
        conversation_ids = list(personas)
    settings = prompt_settings(settings_row)
    memories = snapshot_memories(conversation_ids)
    characters = saved_characters()
    blocks = continuity_blocks(conversation_ids, settings_row, stored_prompts=stored_prompts)
    return {
        pk: PromptInputs(
            persona=persona,
            settings=settings,
            memories=memories.get(pk, ()),
            characters=characters,
            continuity_block=blocks.get(pk, ""),
        )
        for pk, persona in personas.items()
    }


def prompt_inputs_for(
    conversation: Conversation,
    *,
    settings_row: AssistantSettings,
    handoffs: ThreadHandoffs | None = None,
    stored_prompt: str = "",
) -> PromptInputs:
    """One conversation's prompt inputs (as `prompt_inputs_many` gives them).

    `handoffs`: the conversation's handoffs when the caller read them (a send,
    `thread_handoffs_read`), with `stored_prompt` its stored prompt's text
    ("" before the first); without them they are read here.
    """
    if handoffs is None:
        blocks = continuity_blocks([conversation.pk], settings_row)
    else:
        blocks = handoffs.blocks(settings_row=settings_row, stored_prompt=stored_prompt)
    return PromptInputs(
        persona=conversation.persona,
        settings=prompt_settings(settings_row),
        memories=conversation_snapshot_memories(conversation.pk),
        characters=saved_characters(),
        continuity_block=blocks.get(conversation.pk, ""),
    )


def markers_are_current(message: Message, markers: dict[str, str] | None = None) -> bool:
    return _metadata_markers_current(message.metadata, markers or policy_markers())


def _metadata_markers_current(metadata: dict | None, markers: dict[str, str]) -> bool:
    stored = (metadata or {}).get("policy_markers", {})
    return all(stored.get(name) == value for name, value in markers.items())


def static_prompt_ensure(conversation: Conversation) -> Message:
    """The conversation's stored prompt: built now if missing, rebuilt if its policy is stale.

    For callers outside a send (a send composes its prompt from the rows and
    settings it already read, `request_store.send_inputs_read`). Saves the
    conversation's `last_seq` when it appends the prompt. Precondition as
    `static_prompt_compose`.
    """
    existing = Message.objects.filter(conversation=conversation, role=Role.SYSTEM).first()
    conversation.prompt_stale = StalePrompt.objects.filter(pk=conversation.pk).exists()
    return static_prompt_ready(conversation, existing, settings_row=assistant_settings_get())


def static_prompt_built(inputs: PromptInputs) -> BuiltPrompt:
    """The prompt built from `inputs` (`prompt_policy.build_static_prompt`) with its handoff span (none
    without a continuity block)."""
    text = build_static_prompt(inputs)
    return BuiltPrompt(text, handoff_span(inputs) if inputs.continuity_block.strip() else (0, 0))


def prompt_is_current(prompt: Message | None, conversation: Conversation) -> bool:
    """A stored prompt a send reuses as stored: built under the current policy, with its handoff span recorded
    (a prompt stored before spans were is rebuilt once, like a stale one), and its conversation (read under
    its row lock; `conversation.prompt_stale`, its mark read after that lock: `request_store.send_context_load`,
    `static_prompt_ensure`) not marked stale (`StalePrompt`) by a change of its sources whose refresh has not
    reached it yet."""
    return (
        prompt is not None
        and not conversation.prompt_stale
        and markers_are_current(prompt)
        and HANDOFF_SPAN_KEY in (prompt.metadata or {})
    )


def prompt_metadata(built: BuiltPrompt, metadata: dict | None = None) -> dict:
    """A stored prompt's metadata: the policy markers it was built under and its handoff span."""
    return {**(metadata or {}), "policy_markers": policy_markers(), HANDOFF_SPAN_KEY: list(built.handoff_span)}


def static_prompt_ready(
    conversation: Conversation,
    existing: Message | None,
    *,
    settings_row: AssistantSettings,
    handoffs: ThreadHandoffs | None = None,
) -> Message:
    """The stored prompt: `existing` reused when current (`prompt_is_current`), else built from the rows
    read now and stored (`static_prompt_store`). `handoffs`: the conversation's handoffs if the caller read
    them (`thread_handoffs_read`); without them they are read here."""
    if prompt_is_current(existing, conversation):
        return existing
    inputs = prompt_inputs_for(
        conversation,
        settings_row=settings_row,
        handoffs=handoffs,
        stored_prompt=existing.content if existing is not None else "",
    )
    return static_prompt_store(conversation, existing, inputs)


def static_prompt_compose(appending: TranscriptAppend, existing: Message | None, inputs: PromptInputs) -> Message:
    """The prompt built from `inputs` as the conversation's stored prompt, composed for the caller's one
    write: `existing` with the new text (the write saves it, `static_prompt_rewrite`), or a new prompt
    composed into `appending`.

    Precondition for the write: the caller holds the conversation's row lock
    inside a transaction, so a concurrent first send waits instead of racing,
    and a memory edit/delete/refresh either finished before the caller read the
    snapshot or rebuilds this prompt after it commits. `existing` is the
    conversation's stored prompt (or None) read under that same lock, so no
    other prompt can be stored meanwhile and the insert needs no savepoint of
    its own: the partial unique constraint stays the last guard (a second
    prompt fails the whole transaction, never stands beside the first).
    """
    built = static_prompt_built(inputs)
    if existing is not None:
        existing.content = built.text
        existing.metadata = prompt_metadata(built, existing.metadata)
        return existing
    return appending.add(
        parent=None,
        role=Role.SYSTEM,
        binding=None,  # no provider produced it
        make_head=False,
        kind=MessageKind.STATIC_PROMPT,
        content=built.text,
        metadata=prompt_metadata(built),
    )


def static_prompt_rewrite(prompt: Message) -> None:
    """Save a stored prompt `static_prompt_compose` rebuilt in place, and clear its conversation's stale mark
    (the rebuild read the current sources under the conversation's row lock)."""
    prompt.save(update_fields=["content", "metadata", "updated_at"])
    StalePrompt.objects.filter(pk=prompt.conversation_id).delete()


def static_prompt_store(conversation: Conversation, existing: Message | None, inputs: PromptInputs) -> Message:
    """Store the prompt built from `inputs` as the conversation's prompt now (`static_prompt_compose`, then
    its write); same precondition. A send composes it with its turns and writes them together instead."""
    appending = TranscriptAppend(conversation)
    prompt = static_prompt_compose(appending, existing, inputs)
    if existing is not None:
        static_prompt_rewrite(prompt)
    else:
        transcript_write(appending)
    return prompt


def _conversation_pks(conversations: QuerySet[Conversation] | Iterable[Conversation | UUID]) -> QuerySet | list:
    if isinstance(conversations, QuerySet):
        return conversations.order_by().values("pk")
    return [getattr(item, "pk", item) for item in conversations]


def static_prompts_rebuild(conversations: QuerySet[Conversation] | Iterable[Conversation | UUID]) -> int:
    """Rebuild these conversations' stored prompts from current rows, and clear their stale marks; returns
    how many changed. For a bounded scope (one thread, one batch): a scope as large as every thread is marked
    stale instead and refreshed in batches (`continuity.rules.prompt_refresh`).

    Precondition: inside a transaction. Callers that change memories or
    snapshots hold `write_lock.global_write_lock()` first.

    Every conversation row in scope is locked, in id order (two rebuilds never
    deadlock), before any prompt source is read, including conversations with
    no prompt yet: a first send in flight finishes first and is then rebuilt
    here, or starts after we commit and reads what we wrote. The work is bulk
    (a fixed number of queries however many threads are in scope).
    """
    scope = _conversation_pks(conversations)
    locked = list(
        Conversation.objects.select_for_update().filter(pk__in=scope).order_by("pk").values_list("pk", flat=True)
    )
    if not locked:
        return 0
    rows = prompt_rows_rebuilt(prompt_rows_read(locked))
    prompt_rows_write(rows)
    StalePrompt.objects.filter(pk__in=locked).delete()
    return len(rows)


# A stored prompt as the bulk rebuild reads it: (pk, conversation id, persona, content, metadata).
PromptRow = tuple[UUID, UUID, str, str, dict]


def prompt_rows_read(conversation_ids: list[UUID]) -> list[PromptRow]:
    """The stored prompts of these conversations (those that have one), as plain tuples: thousands may be read."""
    rows: list[PromptRow] = []
    for start in range(0, len(conversation_ids), _max_rows_per_statement(1)):
        part = conversation_ids[start : start + _max_rows_per_statement(1)]
        rows += Message.objects.filter(role=Role.SYSTEM, conversation_id__in=part).values_list(
            "pk", "conversation_id", "conversation__persona", "content", "metadata"
        )
    return rows


def prompt_rows_rebuilt(prompts: list[PromptRow]) -> list[tuple[UUID, str, dict]]:
    """Each prompt of `prompts` rebuilt from the current rows, for those whose text or metadata changes:
    `(pk, text, metadata)` for `prompt_rows_write`. Reads the sources of these conversations only (a fixed
    number of queries), each stored prompt once."""
    if not prompts:
        return []
    ids = [row[1] for row in prompts]
    inputs = prompt_inputs_many(
        [(row[1], row[2]) for row in prompts],
        ids,
        settings_row=assistant_settings_get(),
        stored_prompts={row[1]: row[3] for row in prompts},
    )
    markers = policy_markers()
    built: dict[PromptInputs, BuiltPrompt] = {}
    rows: list[tuple[UUID, str, dict]] = []
    for pk, conversation_id, _persona, stored, metadata in prompts:
        key = inputs[conversation_id]
        prompt = built.get(key)
        if prompt is None:
            prompt = built[key] = static_prompt_built(key)
        span = list(prompt.handoff_span)
        if (
            prompt.text != stored
            or not _metadata_markers_current(metadata, markers)
            or (metadata or {}).get(HANDOFF_SPAN_KEY) != span
        ):
            rows.append((pk, prompt.text, {**(metadata or {}), "policy_markers": markers, HANDOFF_SPAN_KEY: span}))
    return rows


def _max_rows_per_statement(params_per_row: int) -> int:
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        limit = connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    else:
        limit = 65_535  # PostgreSQL's bind-parameter ceiling
    return max((limit - 1) // params_per_row, 1)


def prompt_rows_write(rows: list[tuple[UUID, str, dict]]) -> None:
    """Write many rebuilt prompts with one UPDATE per (large) chunk.

    The fan-out of one memory edit to thousands of threads must not cost one
    query per thread; `bulk_update`'s CASE chains are capped at 199 rows on
    SQLite. `UPDATE ... FROM` a VALUES list works on PostgreSQL and SQLite ≥ 3.33.
    """
    if not rows:
        return
    meta = Message._meta
    table = connection.ops.quote_name(meta.db_table)
    pk_column = connection.ops.quote_name(meta.pk.column)
    content_column = connection.ops.quote_name(meta.get_field("content").column)
    metadata_column = connection.ops.quote_name(meta.get_field("metadata").column)
    updated_column = connection.ops.quote_name(meta.get_field("updated_at").column)
    postgres = connection.vendor == "postgresql"
    uuid_cast, json_cast = ("::uuid", "::jsonb") if postgres else ("", "")
    now = meta.get_field("updated_at").get_db_prep_value(timezone.now(), connection)
    chunk = _max_rows_per_statement(3)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            values = ", ".join(["(%s, %s, %s)"] * len(part))
            params: list = []
            for pk, content, metadata in part:
                params += [meta.pk.get_db_prep_value(pk, connection), content, json.dumps(metadata)]
            params.append(now)
            cursor.execute(
                f"WITH v(id, content, metadata) AS (VALUES {values}) "
                f"UPDATE {table} SET {content_column} = v.content, {metadata_column} = v.metadata{json_cast}, "
                f"{updated_column} = %s FROM v WHERE {table}.{pk_column} = v.id{uuid_cast}",
                params,
            )
