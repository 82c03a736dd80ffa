"""A prompt refresh starts in its sender's transaction: when it fails, the sender's change is not committed.

Seed: affected saved prompts "are refreshed before the operation reports
success". The refresh is the receiver of a domain event
(`continuity.rules.refresh_triggers`), run synchronously inside the sending
service's transaction; here the rebuild is made to raise (a controlled fault),
and each sender's write must be gone, on a real database with real commits.
The same call without the fault then commits, so each observation can see the
write it looks for.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from continuity.rules import refresh_triggers
from conversations.services.characters import character_create, character_delete, character_edit
from conversations.services.settings_writes import assistant_settings_update
from conversations.services.threads.thread_writes import conversation_create
from conversations.services.visibility.transitions import (
    conversation_shield_release,
    conversation_trash,
    folder_hidden_set,
)
from elion.base.domain_events import DOMAIN_EVENTS
from elion.models import AssistantSettings, Character
from memories.models import ConversationMemorySnapshot, Memory, MemoryVersion, SnapshotMembership
from memories.services.importing import memories_import
from memories.services.memory_writes import MemoryDraft, memories_reorder, memory_add, memory_delete, memory_edit
from memories.services.snapshots import snapshot_refresh, snapshots_backfill_legacy
from transcript.models import Conversation, Folder

pytestmark = pytest.mark.django_db(transaction=True)


class RefreshFault(RuntimeError):
    """The controlled fault: a rebuild that fails."""


# Each case: set up, then (the sender's call, what its write changes).
Case = Callable[[Callable], tuple[Callable[[], object], Callable[[], object]]]


def _settings(make_turns):
    return (
        lambda: assistant_settings_update(custom_instructions="Answer in riddles."),
        lambda: list(AssistantSettings.objects.values_list("custom_instructions", flat=True)),
    )


def _character_created(make_turns):
    return lambda: character_create(name="Ash"), lambda: list(Character.objects.values_list("name", flat=True))


def _character_edited(make_turns):
    character = character_create(name="Ash")
    return (
        lambda: character_edit(character_id=character.pk, changes={"description": "Grey cloak."}),
        lambda: Character.objects.get(pk=character.pk).description,
    )


def _character_deleted(make_turns):
    character = character_create(name="Ash")
    return lambda: character_delete(character_id=character.pk), lambda: Character.objects.count()


def _memory_edited(make_turns):
    memory = memory_add(text="Loves the sea")
    conversation_create()  # its snapshot holds the memory
    return (
        lambda: memory_edit(memory_id=memory.pk, changes={"text": "Loves the mountains"}),
        lambda: (Memory.objects.get(pk=memory.pk).text, MemoryVersion.objects.count()),
    )


def _memory_deleted(make_turns):
    memory = memory_add(text="Loves the sea")
    conversation_create()
    return (
        lambda: memory_delete(memory_id=memory.pk),
        lambda: (list(Memory.objects.values_list("pk", "active")), SnapshotMembership.objects.count()),
    )


def _memories_reordered(make_turns):
    first, second = memory_add(text="Loves the sea"), memory_add(text="Keeps a journal")
    conversation_create()
    return (
        lambda: memories_reorder(ids=[second.pk, first.pk]),
        lambda: list(Memory.objects.order_by("position").values_list("pk", flat=True)),
    )


def _snapshot_refreshed(make_turns):
    conversation = conversation_create()
    memory_add(text="Loves the sea")  # a newer memory: only the explicit refresh brings it in
    return (
        lambda: snapshot_refresh(conversation.pk),
        lambda: (
            SnapshotMembership.objects.filter(conversation=conversation).count(),
            ConversationMemorySnapshot.objects.get(conversation=conversation).provenance,
        ),
    )


def _legacy_snapshots_backfilled(make_turns):
    conversation = conversation_create()
    ConversationMemorySnapshot.objects.filter(conversation=conversation).delete()
    return snapshots_backfill_legacy, lambda: ConversationMemorySnapshot.objects.count()


def _linked_source(make_turns) -> Conversation:
    """A source in a visible folder whose handoff a newer conversation carries."""
    source = conversation_create(folder_id=Folder.objects.create(name="Letters").pk)
    make_turns(source, ("user", "Remember the lighthouse ledger?"), ("assistant", "Every page of it."))
    assert conversation_create().thread_handoff.source_id == source.pk
    return source


def _folder_hidden(make_turns):
    source = _linked_source(make_turns)
    return (
        lambda: folder_hidden_set(folder_id=source.folder_id, hidden=True),
        lambda: Folder.objects.get(pk=source.folder_id).hidden,
    )


def _trashed(make_turns):
    source = _linked_source(make_turns)
    return lambda: conversation_trash(conversation_id=source.pk), lambda: Conversation.objects.get(pk=source.pk).trashed


def _shield_released(make_turns):
    source = _linked_source(make_turns)
    Conversation.objects.filter(pk=source.pk).update(shielded=True)
    return (
        lambda: conversation_shield_release(conversation_id=source.pk),
        lambda: Conversation.objects.get(pk=source.pk).shielded,
    )


CASES: dict[str, Case] = {
    "settings_saved": _settings,
    "character_created": _character_created,
    "character_edited": _character_edited,
    "character_deleted": _character_deleted,
    "memory_edited": _memory_edited,
    "memory_deleted": _memory_deleted,
    "memories_reordered": _memories_reordered,
    "snapshot_refreshed": _snapshot_refreshed,
    "legacy_snapshots_backfilled": _legacy_snapshots_backfilled,
    "visibility_changed_folder_hidden": _folder_hidden,
    "visibility_changed_trashed": _trashed,
    "shield_released": _shield_released,
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_failing_refresh_rolls_back_its_sender(case, make_turns, monkeypatch):
    operation, observed = case(make_turns)
    before = observed()
    rebuilt = []

    def failing_rebuild(conversations):
        rebuilt.append(conversations)
        raise RefreshFault("injected rebuild failure")

    with monkeypatch.context() as patched:
        # A receiver rebuilds a bounded scope in the transaction, or marks a growing one stale there
        # (`continuity.rules.prompt_refresh`): either step failing fails the sender.
        patched.setattr(refresh_triggers, "static_prompts_rebuild", failing_rebuild)
        patched.setattr(refresh_triggers, "static_prompts_mark_stale", failing_rebuild)
        with pytest.raises(RefreshFault):
            operation()
    assert len(rebuilt) == 1, "the sender's receiver ran"
    assert observed() == before, "the sender's write was rolled back with the refresh"

    operation()
    assert observed() != before, "without the fault the same write commits"


def test_new_memory_additions_and_bulk_imports_do_not_refresh_older_conversation_snapshots():
    """Seed: "New memory additions and bulk imports do not refresh older conversation snapshots." They
    send no domain event, so no receiver runs."""
    conversation_create()
    sent = []

    def record(sender, signal, **payload):
        sent.append(signal)

    for event in DOMAIN_EVENTS.values():
        event.connect(record, weak=False, dispatch_uid="test-recorder")
    try:
        memory = memory_add(text="Loves the sea")
        memories_import(drafts=[MemoryDraft(text="Keeps a journal"), MemoryDraft(text="Walks at dawn")])
        assert Memory.objects.count() == 3
        assert sent == []
        memory_edit(memory_id=memory.pk, changes={"text": "Loves the mountains"})  # the recorder hears an edit
        assert sent == [DOMAIN_EVENTS["memory_edited"]]
    finally:
        for event in DOMAIN_EVENTS.values():
            event.disconnect(dispatch_uid="test-recorder")
