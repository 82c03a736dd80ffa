"""A memory's deletion in steps (issue 40): its first transaction writes no snapshot row, the snapshot rows
go in bounded batches of their own, and a deletion a dead process left part-way is finished by the tick.

The seed's deletion rules themselves ("removes the ID from every conversation snapshot and rebuilds
affected prompts") are tests/memories/test_snapshot_rules.py's; these hold the steps to them meanwhile.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from continuity.tasks import prompts_reconcile_tick
from memories.models import Memory, SnapshotMembership
from memories.services import memory_writes
from memories.services.snapshots import snapshot_refresh
from tests.memories.conftest import fresh_prompt, member_ids, memory_texts, stored_prompt
from transcript.models import StalePrompt

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def holders(make_memory, make_conversation, store_prompt):
    """A memory held by ten threads with stored prompts, beside one kept."""
    kept, deleted = make_memory("Kept fact"), make_memory("Deleted fact")
    threads = [make_conversation() for _ in range(10)]
    for thread in threads:
        store_prompt(thread)
    return kept, deleted, threads


@pytest.fixture
def statement_blocks():
    """For each statement run from now on: its SQL and the outermost atomic block it ran in (None: none)."""
    seen: list[tuple[str, object]] = []

    def record(execute, sql, params, many, context):
        seen.append((sql, connection.atomic_blocks[0] if connection.atomic_blocks else None))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield seen


def test_a_memory_deletion_purges_snapshot_rows_a_bounded_batch_per_transaction(holders, statement_blocks,
                                                                                  monkeypatch):
    kept, deleted, threads = holders
    monkeypatch.setattr(memory_writes, "SNAPSHOT_PURGE_BATCH", 3)
    assert memory_writes.memory_delete(memory_id=deleted.pk) == 10
    table = SnapshotMembership._meta.db_table
    mark = next(block for sql, block in statement_blocks
                if sql.startswith("INSERT") and StalePrompt._meta.db_table in sql)
    purges = [(sql, block) for sql, block in statement_blocks
              if sql.startswith("DELETE") and table in sql and '"id" IN' in sql]
    assert len(purges) == 4  # 10 rows, 3 a batch (then the memory's own delete, which finds none left)
    assert all(block is not None and block is not mark for _, block in purges)
    assert len({id(block) for _, block in purges}) == 4  # each batch its own transaction
    assert not Memory.all_objects.filter(pk=deleted.pk).exists()
    for thread in threads:
        assert member_ids(thread) == {kept.pk}
        assert memory_texts(stored_prompt(thread)) == ["Kept fact"] and stored_prompt(thread) == fresh_prompt(thread)


def test_a_deletion_a_dead_process_left_after_its_first_step_is_invisible_and_the_tick_finishes_it(
    holders, make_conversation, settings
):
    kept, deleted, threads = holders
    # The process dies after the first transaction (and the prompts' rebuild it triggers).
    memory_writes._memory_deletion_start(memory_id=deleted.pk)
    assert SnapshotMembership.objects.filter(memory_id=deleted.pk).count() == 10  # the rows wait
    # Nothing shows it, carries it or can edit it meanwhile.
    assert memory_texts(stored_prompt(threads[0])) == ["Kept fact"]
    assert [m.pk for m in memory_writes.memories_list()] == [kept.pk]
    assert member_ids(make_conversation()) == {kept.pk}
    snapshot_refresh(conversation_id=threads[1].pk)
    assert member_ids(threads[1]) == {kept.pk}
    settings.ELION_OWNER_PASSWORD = ""
    client = Client()
    assert client.get(f"/api/memories/{deleted.pk}/").status_code == 404
    patch = client.patch(f"/api/memories/{deleted.pk}/", {"text": "Back again"}, content_type="application/json")
    assert patch.status_code == 404
    assert client.delete(f"/api/memories/{deleted.pk}/").status_code == 404
    assert client.get(f"/api/memories/{deleted.pk}/impact/").status_code == 404
    for page in (f"/memories/{deleted.pk}/", f"/memories/{deleted.pk}/edit/", f"/memories/{deleted.pk}/delete/"):
        assert client.get(page).status_code == 404, page
    for page in ("/memories/", f"/memories/in/{threads[2].pk}/"):
        response = client.get(page)
        assert response.status_code == 200 and "Deleted fact" not in response.content.decode(), page
    prompts_reconcile_tick()
    assert not Memory.all_objects.filter(pk=deleted.pk).exists()
    assert not SnapshotMembership.objects.filter(memory_id=deleted.pk).exists()
    assert all(member_ids(thread) == {kept.pk} for thread in threads)
