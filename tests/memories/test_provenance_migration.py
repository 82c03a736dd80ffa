"""Migration `memories.0002_provenance_history_proposals`: a memory saved before sources were kept is marked
`unrecorded` (where it came from is not inferred, as the seed keeps a legacy snapshot's capture time unknown);
memories saved afterwards record their source."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.models import Memory, MemorySource
from memories.services.memory_writes import memory_add

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("memories", "0001_memories_and_conversation_snapshots")]


def test_rows_saved_before_sources_were_kept_are_marked_unrecorded():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old_memory = executor.loader.project_state(BEFORE).apps.get_model("memories", "Memory")
    old_memory.objects.create(text="Saved long ago.", position=1)

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert Memory.objects.get().source == MemorySource.UNRECORDED
    assert memory_add(text="Typed today.").source == MemorySource.TYPED
