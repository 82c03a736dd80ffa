"""Refreshing many stored prompts in bounded batches (`continuity.rules.prompt_refresh`, issue 40).

Seed: "Settings saves still refresh existing Elion prompts", "Editing a memory: refreshes existing prompts
only for threads whose snapshots already contain that memory ID", "Deleting a memory: removes the ID from
every conversation snapshot and rebuilds affected prompts so the deleted memory cannot linger in stored
prompt context", and for a hidden folder "affected saved Elion prompts are refreshed before the operation
reports success". The operation marks the prompts stale in its transaction and rebuilds them in batches
before it returns; no send uses a marked prompt meanwhile.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from continuity.rules import prompt_refresh, prompt_store
from continuity.tasks import prompts_reconcile_tick
from conversations.sending.commands import SendCommand
from conversations.sending.prepare import send_prepare
from conversations.services.settings_writes import assistant_settings_update
from memories.models import Memory, MemorySetLock
from memories.services.memory_writes import memory_add, memory_delete, memory_edit
from tests.continuity.stored_prompts import prompts, threads_with_prompts
from transcript.models import Conversation, StalePrompt

pytestmark = pytest.mark.django_db

BATCH = 4


def statements(operation) -> int:
    with CaptureQueriesContext(connection) as queries:
        operation()
    return len(queries)


@pytest.mark.parametrize(
    "operation",
    [
        lambda n: assistant_settings_update(custom_instructions=f"Answer in riddles, take {n}."),
        lambda n: memory_edit(memory_id=Memory.objects.get(text__startswith="Loves").pk, changes={"text": f"Loves {n}"}),
    ],
    ids=["settings_save", "memory_edit"],
)
def test_a_refresh_costs_statements_per_batch_never_per_conversation(operation, settings):
    """The statement count grows by a fixed amount per batch of `ELION_PROMPT_REFRESH_BATCH` conversations:
    one batch, two and four batches of prompts cost c, c + d and c + 3d; and the same four batches' prompts
    in one larger batch cost c again."""
    settings.ELION_PROMPT_REFRESH_BATCH = BATCH
    memory_add(text="Loves the sea")
    threads_with_prompts(BATCH)
    one = statements(lambda: operation(1))
    threads_with_prompts(BATCH)
    two = statements(lambda: operation(2))
    threads_with_prompts(2 * BATCH)
    four = statements(lambda: operation(4))
    per_batch = two - one
    assert per_batch > 0 and four == one + 3 * per_batch, (one, two, four)
    assert all("4" in text for text in prompts()), "every prompt was rebuilt before the operation returned"
    settings.ELION_PROMPT_REFRESH_BATCH = 4 * BATCH
    assert statements(lambda: operation(5)) == one, "a batch's statements do not grow with its conversations"
    assert len(prompts()) == 4 * BATCH and all("5" in text for text in prompts())
    assert not StalePrompt.objects.exists()


def test_saving_settings_unchanged_rebuilds_nothing():
    assistant_settings_update(custom_instructions="Answer in riddles.")
    conversation = threads_with_prompts(1)[0]
    generation = MemorySetLock.objects.get(pk=1).prompt_generation
    assistant_settings_update(custom_instructions="Answer in riddles.")
    assert MemorySetLock.objects.get(pk=1).prompt_generation == generation
    assert not StalePrompt.objects.filter(pk=conversation.pk).exists()


def test_a_send_never_uses_a_prompt_marked_stale_whose_batch_has_not_run(monkeypatch):
    """The process died between the operation's commit and its batches: the send rebuilds the marked
    prompt from the current rows before the model sees it, and clears the mark."""
    conversation = threads_with_prompts(1)[0]
    monkeypatch.setattr(prompt_refresh, "stale_prompts_refresh", lambda **_: 0)
    assistant_settings_update(custom_instructions="Answer in riddles.")
    assert StalePrompt.objects.filter(pk=conversation.pk).exists()
    assert "riddles" not in prompts()[0], "not rebuilt yet"

    prepared = send_prepare(SendCommand(conversation_id=conversation.pk, content="And now?"))
    assert "Answer in riddles." in str(prepared.request)
    assert "Answer in riddles." in prompts()[0]
    assert not StalePrompt.objects.filter(pk=conversation.pk).exists()


def test_the_reconciliation_tick_finishes_what_an_interrupted_refresh_left(monkeypatch):
    """Seed: a deleted memory "cannot linger in stored prompt context", also when the process died before
    its batches: the scheduled tick rebuilds what is still marked."""
    doomed = memory_add(text="The secret garden gate")
    threads_with_prompts(3)
    assert all("secret garden" in text for text in prompts())
    with monkeypatch.context() as patched:
        patched.setattr(prompt_refresh, "stale_prompts_refresh", lambda **_: 0)
        memory_delete(memory_id=doomed.pk)
    assert StalePrompt.objects.count() == 3
    prompts_reconcile_tick()
    assert not any("secret garden" in text for text in prompts())
    assert not StalePrompt.objects.exists()


def test_a_batch_that_read_before_another_marking_reads_again(monkeypatch):
    """A batch reads and builds holding no lock; if another operation marked prompts (and so may have
    changed their sources) before the batch writes, the batch is read again and never writes the older
    text."""
    memory = memory_add(text="Loves the sea")
    threads_with_prompts(2)
    real = prompt_store.prompt_rows_rebuilt
    calls = []

    def racing_rebuild(rows):
        built = real(rows)
        if not calls:
            # Another edit commits between this batch's read and its write.
            Memory.objects.filter(pk=memory.pk).update(text="Loves the mountains")
            prompt_refresh.static_prompts_mark_stale(Conversation.objects.all())
        calls.append(len(rows))
        return built

    monkeypatch.setattr(prompt_refresh, "prompt_rows_rebuilt", racing_rebuild)
    memory_edit(memory_id=memory.pk, changes={"text": "Loves the river"})
    assert len(calls) == 2, "the first read was thrown away"
    assert all("Loves the mountains" in text for text in prompts())
    assert not StalePrompt.objects.exists()
