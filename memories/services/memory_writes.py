"""Writes on long-term memories, and the refresh rules they trigger.

- Adding (and importing, see `memories.services.importing`) reaches future threads
  only: no existing snapshot or prompt changes.
- Editing rebuilds the prompts of threads whose snapshot holds the id, and
  nothing else; no newer memory is pulled in.
- Deleting removes the id from every snapshot and rebuilds every affected
  prompt before it returns; the snapshot rows go in bounded batches after
  its first transaction (`memory_delete`).
- Reordering changes the global order prompts list memories in, so threads
  holding a moved memory are rebuilt like an edit.
- Every memory records its source (typed, imported with its file, or an
  approved proposal: `memories.services.proposals`), and every edit of its text,
  category or importance keeps what it said before (`MemoryVersion`).
  Deleting the memory deletes those versions and its approved proposal with
  it: a deletion removes the memory's past wording too.

Each write sends its domain event (`elion.base.domain_events`) inside its
transaction, after its writes; the refresh itself is the event's receiver in
`continuity.rules.refresh_triggers`, run under the lock order documented in
`memories.services.write_lock`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max
from django.utils import timezone

from continuity.rules.prompt_policy import PromptInputs, PromptMemory, section_long_term_memories
from continuity.rules.prompt_refresh import refreshes_stale_prompts
from continuity.rules.prompt_store import prompt_settings
from continuity.rules.request_policy import estimate_tokens
from elion.base.assistant_settings import assistant_settings_read
from elion.base.domain_events import memories_reordered, memory_deleted, memory_edited
from elion.base.errors import InvalidInput
from elion.base.rows import access_row
from memories.models import (
    IMPORTANCE_DEFAULT,
    IMPORTANCE_MAX,
    IMPORTANCE_MIN,
    MEMORY_TEXT_MAX,
    Memory,
    MemoryCategory,
    MemorySource,
    MemoryVersion,
    SnapshotMembership,
)
from memories.services.write_lock import global_write_lock

EDITABLE_FIELDS = ("text", "category", "importance", "active")
# The fields a memory's history keeps (`active` is a switch, not wording).
VERSIONED_FIELDS = ("text", "category", "importance")


@dataclass(frozen=True)
class MemoryDraft:
    """A checked memory not yet saved (from a form, the API or an import)."""

    text: str
    category: str = MemoryCategory.GENERAL
    importance: int = IMPORTANCE_DEFAULT
    active: bool = True


def clean_text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("A memory needs some text.", code="empty_memory_text")
    text = value.strip()
    if len(text) > MEMORY_TEXT_MAX:
        raise InvalidInput(
            f"A memory can be at most {MEMORY_TEXT_MAX:,} characters; this one has {len(text):,}.",
            code="memory_text_too_long",
        )
    return text


def clean_category(value: object) -> str:
    category = value.strip().lower() if isinstance(value, str) else value
    if category in ("", None):
        return MemoryCategory.GENERAL
    if category not in MemoryCategory.values:
        raise InvalidInput(
            f"category must be one of {', '.join(MemoryCategory.values)}; got {value!r}.", code="unknown_category"
        )
    return category


def clean_importance(value: object) -> int:
    if value in (None, ""):
        return IMPORTANCE_DEFAULT
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not IMPORTANCE_MIN <= value <= IMPORTANCE_MAX:
        raise InvalidInput(
            f"importance must be a whole number from {IMPORTANCE_MIN} to {IMPORTANCE_MAX}; got {value!r}.",
            code="invalid_importance",
        )
    return value


def clean_active(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput("active must be true or false.", code="invalid_active")
    return value


_CLEANERS = {"text": clean_text, "category": clean_category, "importance": clean_importance, "active": clean_active}


def memory_draft(
    *, text: object, category: object = None, importance: object = None, active: object = True
) -> MemoryDraft:
    return MemoryDraft(
        text=clean_text(text),
        category=clean_category(category),
        importance=clean_importance(importance),
        active=clean_active(active),
    )


def access_memory(memory_id: int | str, *, lock: bool = False) -> Memory:
    """Fetch a memory or 404. `lock` takes its row lock (inside a transaction)."""
    return access_row(
        Memory.objects.all(), memory_id, kind="int", missing="No memory has that id.", code="memory_not_found", lock=lock
    )


def next_position() -> int:
    """Position after the last memory. Precondition: `global_write_lock()` is held."""
    return (Memory.objects.aggregate(last=Max("position"))["last"] or 0) + 1


def memory_edit_impact(memory_id: int | str) -> int:
    """How many existing threads an edit or delete of this memory changes (from snapshots)."""
    memory = access_memory(memory_id)
    return SnapshotMembership.objects.filter(memory=memory).count()


@transaction.atomic
def memory_add(
    *, text: object, category: object = None, importance: object = None, active: object = True,
    source: str = MemorySource.TYPED,
) -> Memory:
    """Save a new memory at the end of the global order. It reaches new threads only.

    `source`: typed by the owner (the form and the API), or `proposal` when
    `memories.services.proposals.proposal_approve` calls it."""
    draft = memory_draft(text=text, category=category, importance=importance, active=active)
    global_write_lock()
    return Memory.objects.create(
        text=draft.text,
        category=draft.category,
        importance=draft.importance,
        active=draft.active,
        position=next_position(),
        source=source,
    )


@refreshes_stale_prompts
def memory_edit(*, memory_id: int | str, changes: dict) -> Memory:
    """Change a memory; rebuild only the prompts of threads that hold it."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput(f"Unknown memory fields: {', '.join(sorted(unknown))}.", code="unknown_field")
    cleaned = {name: _CLEANERS[name](value) for name, value in changes.items()}
    global_write_lock()
    memory = access_memory(memory_id, lock=True)
    changed = [name for name, value in cleaned.items() if getattr(memory, name) != value]
    if not changed:
        return memory
    if set(changed) & set(VERSIONED_FIELDS):
        MemoryVersion.objects.create(
            memory=memory, text=memory.text, category=memory.category, importance=memory.importance,
            replaced_at=timezone.now(),
        )
    for name in changed:
        setattr(memory, name, cleaned[name])
    memory.save(update_fields=[*changed, "updated_at"])
    memory_edited.send(sender=Memory, memory_id=memory.pk)
    return memory


def memory_delete(*, memory_id: int | str) -> int:
    """Delete a memory: purge its id from every snapshot, rebuild every affected prompt.

    Returns how many threads held it. Three steps, all before it returns:

    1. One transaction (`_memory_deletion_start`): the memory leaves the prompts (inactive) and every
       list, snapshot view and edit (`deleting_since`, the default manager's filter), and `memory_deleted`
       marks its holders' prompts stale while their snapshot rows still name them. After it commits the
       holders' prompts are rebuilt without it (`refreshes_stale_prompts`).
    2. Its snapshot rows are deleted `SNAPSHOT_PURGE_BATCH` at a time, each batch a transaction of its own
       (`memory_deletion_finish`): a memory held by 10,000 threads has 10,000 rows scattered over the
       membership table, and deleting them in the first transaction held the database's write lock
       (SQLite) for most of a second while every send waited.
    3. The memory row goes, its versions and approved proposal with it.

    A crash between the steps leaves the memory invisible and its rows waiting; the reconciliation tick
    finishes it (`memory_deletions_finish`). No reader sees a prompt that disagrees with its snapshot: the
    snapshot views and the prompts both skip a memory being deleted.
    """
    held_by, memory_pk = _memory_deletion_start(memory_id=memory_id)
    memory_deletion_finish(memory_pk)
    return held_by


@refreshes_stale_prompts
def _memory_deletion_start(*, memory_id: int | str) -> tuple[int, int]:
    global_write_lock()
    memory = access_memory(memory_id, lock=True)
    held_by = SnapshotMembership.objects.filter(memory=memory).count()
    Memory.objects.filter(pk=memory.pk).update(active=False, deleting_since=timezone.now())
    memory_deleted.send(sender=Memory, memory_id=memory.pk)
    return held_by, memory.pk


# Snapshot rows deleted per transaction: each batch holds the write lock for a few milliseconds.
SNAPSHOT_PURGE_BATCH = 500


def memory_deletion_finish(memory_pk: int) -> None:
    """Steps 2 and 3 of `memory_delete` for a memory whose deletion started: its snapshot rows a batch per
    transaction, then the row. Safe to run twice at once (each batch deletes what is still there)."""
    while True:
        with transaction.atomic():
            global_write_lock()
            batch = list(
                SnapshotMembership.objects.filter(memory_id=memory_pk).values_list("pk", flat=True)[
                    :SNAPSHOT_PURGE_BATCH
                ]
            )
            SnapshotMembership.objects.filter(pk__in=batch).delete()
        if len(batch) < SNAPSHOT_PURGE_BATCH:
            break
    with transaction.atomic():
        global_write_lock()
        Memory.all_objects.filter(pk=memory_pk, deleting_since__isnull=False).delete()


def memory_deletions_finish() -> int:
    """Finish every deletion a process left part-way (it died after step 1): the reconciliation tick's.
    Returns how many it finished."""
    started = list(Memory.all_objects.filter(deleting_since__isnull=False).values_list("pk", flat=True))
    for memory_pk in started:
        memory_deletion_finish(memory_pk)
    return len(started)


@refreshes_stale_prompts
def memories_reorder(*, ids: object) -> list[Memory]:
    """Set the global order to exactly `ids` (every memory, once each)."""
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise InvalidInput("ids must be a list of memory ids (integers).", code="invalid_ids")
    if len(set(ids)) != len(ids):
        raise InvalidInput("ids lists a memory more than once.", code="duplicate_ids")
    global_write_lock()
    memories = {memory.pk: memory for memory in Memory.objects.select_for_update().order_by("pk")}
    foreign = [i for i in ids if i not in memories]
    if foreign:
        raise InvalidInput(
            f"ids names memories that do not exist: {', '.join(map(str, foreign[:10]))}.", code="unknown_memory_ids"
        )
    missing = [pk for pk in memories if pk not in set(ids)]
    if missing:
        raise InvalidInput(
            f"ids must list every memory; missing: {', '.join(map(str, missing[:10]))}.", code="missing_memory_ids"
        )
    moved = []
    for position, pk in enumerate(ids, start=1):
        memory = memories[pk]
        if memory.position != position:
            memory.position = position
            moved.append(memory)
    if moved:
        Memory.objects.bulk_update(moved, ["position"])
        memories_reordered.send(sender=Memory, memory_ids=[memory.pk for memory in moved])
    return [memories[pk] for pk in ids]


def memories_list() -> list[Memory]:
    """Every memory in global order, each with `held_by`: how many chats' snapshots hold it."""
    return list(
        Memory.objects.annotate(held_by=Count("memberships"))
        .select_related("proposal")
        .prefetch_related("versions")
        .order_by("position", "id")
    )


def memory_with_counts(memory_id: int | str) -> Memory:
    """One memory with `held_by` (how many chats hold it, from snapshots; never which)."""
    memory = access_row(
        Memory.objects.select_related("proposal").prefetch_related("versions"), memory_id, kind="int",
        missing="No memory has that id.", code="memory_not_found",
    )
    memory.held_by = SnapshotMembership.objects.filter(memory=memory).count()
    return memory


def memory_history(memory: Memory) -> list[MemoryVersion]:
    """What the memory said before each edit, newest first."""
    return list(MemoryVersion.objects.filter(memory=memory).order_by("-replaced_at", "-id"))


@dataclass(frozen=True)
class MemoryBudget:
    """The static prompt's memory section, as a new chat would carry it, against the input budget."""

    memories: int
    section_tokens: int
    input_budget_tokens: int

    @property
    def percent(self) -> float:
        return round(100 * self.section_tokens / self.input_budget_tokens, 1) if self.input_budget_tokens else 0.0


def memory_section_budget() -> MemoryBudget:
    """Estimated tokens (the request-size estimate) of the memory section built from every active memory:
    what a new chat's stored prompt holds, so the owner sees when memories crowd out history."""
    memories = tuple(
        PromptMemory(text, MemoryCategory(category).label, importance)
        for text, category, importance in Memory.objects.filter(active=True)
        .order_by("position", "id")
        .values_list("text", "category", "importance")
    )
    inputs = PromptInputs(persona="elion", settings=prompt_settings(assistant_settings_read()), memories=memories)
    return MemoryBudget(
        memories=len(memories),
        section_tokens=estimate_tokens(section_long_term_memories(inputs)),
        input_budget_tokens=settings.ELION_INPUT_BUDGET_TOKENS,
    )
