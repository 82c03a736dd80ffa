"""The global write lock: one row lock that orders every writer of what threads may carry.

Lock order (every writer follows it, so none can deadlock):
1. `global_write_lock()`: every write to memories or snapshot membership, every conversation creation
   (it captures a snapshot), Branch / Fresh Chat / fork, visibility transitions and settings saves take
   this first.
2. Conversation rows, in id order (`static_prompts_rebuild` does it).
A first send takes only its conversation's row lock and reads memories without locking them; whichever of
it and a memory write commits first, the other then sees it (see
`continuity.rules.prompt_store.static_prompt_ensure`).

Precondition: inside a transaction, holding no conversation row lock. On SQLite the IMMEDIATE transaction
already holds the database's write lock; this row lock is what orders writers on PostgreSQL. The row is
`memories.MemorySetLock` (its table predates this module's name).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction

from memories.models import MemorySetLock


def global_write_lock() -> None:
    """Take the global write lock (lock order step 1), creating its row on first use."""
    if _lock_row():
        return
    try:
        with transaction.atomic():
            MemorySetLock.objects.create(pk=1)
    except IntegrityError:
        pass  # another transaction created it first; lock the committed row
    _lock_row()


def _lock_row() -> bool:
    return bool(list(MemorySetLock.objects.select_for_update().filter(pk=1).values_list("pk", flat=True)))
