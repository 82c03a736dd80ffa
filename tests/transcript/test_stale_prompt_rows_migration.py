"""Transcript 0005 (issue 40): a stored prompt's stale mark moves from the conversation's `prompt_stale` column
to a `StalePrompt` row of its own, on SQLite and PostgreSQL, and back. A conversation marked before the
migration is marked after it (its next send still rebuilds its prompt), one not marked is not.

A throwaway database of the suite's kind, driven through `manage.py` subprocesses (as
tests/transcript/test_rows_move_migration.py): migrated to just before 0005, given two conversations through
the models of that state, one of them marked, then migrated forward, back, and forward again.
"""

from __future__ import annotations

import pytest

from tests.support.migrating_instance import before_the_move, last_json, migrating_instance

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

MOVE = ("transcript", "0005_stale_prompts_in_their_own_rows")

ROWS_BEFORE = before_the_move(MOVE) + """
import json
executor.migrate(targets)
apps = executor.loader.project_state(targets).apps
Conversation = apps.get_model("transcript", "Conversation")
marked = Conversation.objects.create(title="marked", prompt_stale=True)
clean = Conversation.objects.create(title="clean")
print(json.dumps({"marked": str(marked.pk), "clean": str(clean.pk)}))
"""

MARKS_AFTER = """
import json
from transcript.models import StalePrompt
print(json.dumps(sorted(str(pk) for pk in StalePrompt.objects.values_list("pk", flat=True))))
"""

COLUMN_BACK = """
import json
import uuid
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("SELECT id, prompt_stale FROM conversations_conversation ORDER BY title DESC")
    rows = cursor.fetchall()
print(json.dumps([[str(uuid.UUID(str(pk))), bool(stale)] for pk, stale in rows]))
"""


@pytest.mark.timeout(600)
def test_a_conversation_marked_stale_before_the_migration_stays_marked_after_it_and_back(tmp_path):
    with migrating_instance(tmp_path) as instance:
        made = last_json(instance, ROWS_BEFORE)
        instance.manage("migrate", "--noinput")
        assert last_json(instance, MARKS_AFTER) == [made["marked"]]

        instance.manage("migrate", "--noinput", "transcript", "0004")
        rows = last_json(instance, COLUMN_BACK)
        assert {pk: stale for pk, stale in rows} == {made["marked"]: True, made["clean"]: False}

        instance.manage("migrate", "--noinput")
        assert last_json(instance, MARKS_AFTER) == [made["marked"]]
