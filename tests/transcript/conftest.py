from __future__ import annotations

import pytest

from tests.support.broken_trees import broken_thread, parent_restored


@pytest.fixture
def make_broken_thread(db):
    """`tests.support.broken_trees.broken_thread`, each one mended again before the test's rollback checks
    the database's foreign keys."""
    made = []

    def make(kind: str, **kwargs):
        made.append(broken_thread(kind, **kwargs))
        return made[-1]

    yield make
    for broken in made:
        parent_restored(broken)
