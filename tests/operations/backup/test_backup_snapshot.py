"""A backup reads one consistent snapshot and never blocks a send's writes (issue 42).

On SQLite, Django opens every transaction `BEGIN IMMEDIATE` (the settings'
transaction mode), which holds the write lock: a backup read inside one held
every send for the backup's whole length. The backup now reads in its own
deferred WAL snapshot; on PostgreSQL in a REPEATABLE READ, READ ONLY one.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile

import pytest
from django.db import connection

from operations.backup.writing import backup_chunks
from transcript.models import Conversation

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_write_goes_through_while_a_backup_runs_and_the_backup_keeps_its_snapshot(settings):
    Conversation.objects.create(title="Before the backup")
    chunks = backup_chunks(row_batch=1)
    parts = [next(chunks)]  # the snapshot is taken: the backup is reading

    written: list[object] = []

    def send_writes() -> None:
        try:
            written.append(Conversation.objects.create(title="Written during the backup"))
        except Exception as exc:  # noqa: BLE001 - the failure is the finding
            written.append(exc)
        finally:
            connection.close()

    writer = threading.Thread(target=send_writes)
    writer.start()
    writer.join(timeout=60)
    assert not writer.is_alive() and isinstance(written[0], Conversation), written
    parts.extend(chunks)

    with zipfile.ZipFile(io.BytesIO(b"".join(parts))) as archive:
        titles = [json.loads(line)["fields"]["title"] for line in
                  archive.read("models/transcript.conversation.jsonl").splitlines()]
    assert titles == ["Before the backup"], "the backup holds its snapshot, not the write made during it"
    assert Conversation.objects.count() == 2
