"""A backup made before the transcript's rows moved to the `transcript` app and the owner's settings rows to
the `elion` app (issue 45) still restores.

Such a backup names the rows `conversations.<model>` (members, manifest entries and every row's label) and
lists no transcript and no elion migration (the elion app was not backed up then). The test writes one from this instance (the labels and the migrations list
turned back), restores it into a fresh instance and compares every row and every API answer.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from django.test import Client

from operations.backup.members import LABELS_BEFORE_ISSUE_45, MOVED_TO_ELION, MOVED_TO_TRANSCRIPT
from tests.operations.backup.conftest import backup_bytes, build_rich_instance
from tests.support.backup_files import members_of, rewritten
from tests.support.factories import prompts_marked
from tests.support.instance_answers import instance_answers
from transcript.models import Conversation, Role

pytestmark = pytest.mark.django_db(transaction=True)

LABELS_BEFORE = {now: before for before, now in LABELS_BEFORE_ISSUE_45.items()}


STALE_MARKS = "models/transcript.staleprompt.jsonl"


def _stale_marks_in_conversations(line: str, marked: set[str]) -> dict:
    """A conversation row as the version before transcript 0005 wrote it: its stale mark a field of its own."""
    row = json.loads(line)
    if row["model"] == "transcript.conversation":
        row["fields"]["prompt_stale"] = row["pk"] in marked
    return row


def as_made_before_issue_45(members: dict[str, bytes]) -> dict[str, bytes]:
    """The backup as the version before the moves wrote it: old labels everywhere, no transcript or elion
    migrations, and (as before transcript 0005) a conversation's stale mark in its row, not a row of its own."""
    manifest = json.loads(members["manifest.json"])
    marked = {json.loads(line)["pk"] for line in members.get(STALE_MARKS, b"").decode().splitlines()}
    manifest["models"] = [entry for entry in manifest["models"] if entry["member"] != STALE_MARKS]
    manifest["members"].pop(STALE_MARKS, None)
    moved = {f"models/{now}.jsonl" for now in LABELS_BEFORE} | {STALE_MARKS}
    older = {name: data for name, data in members.items() if name not in moved}
    for entry in manifest["models"]:
        before = LABELS_BEFORE.get(entry["model"])
        if before is None:
            continue
        lines = members[entry["member"]].decode().splitlines()
        data = "".join(
            json.dumps({**_stale_marks_in_conversations(line, marked), "model": before}) + "\n" for line in lines
        ).encode()
        member = f"models/{before}.jsonl"
        del manifest["members"][entry["member"]]
        manifest["members"][member] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        older[member] = data
        entry["model"], entry["member"] = before, member
    manifest["migrations"].pop("transcript", None)
    manifest["migrations"].pop("elion", None)
    manifest["migrations"]["conversations"] = [
        name for name in manifest["migrations"]["conversations"] if name <= "0032_message_read_aloud_at"
    ]
    older["manifest.json"] = json.dumps(manifest).encode()
    return older


@pytest.mark.timeout(300)  # a rich instance, a restore and every answer read back, as test_round_trip
def test_a_backup_naming_the_rows_conversations_restores_every_row_and_answer(
    scripted_provider, fresh_instance, tmp_path
):
    client = Client()
    build_rich_instance(client, scripted_provider)
    # One stored prompt marked stale (its refresh not done when the backup was made): marked after the restore.
    prompted = Conversation.objects.filter(messages__role=Role.SYSTEM).first()
    prompts_marked([prompted])
    path = tmp_path / "backup.zip"
    path.write_bytes(backup_bytes(client))
    original = instance_answers()
    assert original["rows"]["transcript.staleprompt"], "the mark is one of the rows compared after the restore"
    older_members = as_made_before_issue_45(members_of(path))
    assert b'"prompt_stale": true' in older_members["models/conversations.conversation.jsonl"]
    # The file really is an old one: no member, entry or row names the transcript app.
    assert not any(name.startswith(("models/transcript.", "models/elion.")) for name in older_members)
    assert all(
        f"models/conversations.{name}.jsonl" in older_members
        for name in ("conversation", "message", "assistantsettings", "character")
    )
    assert b'"model": "transcript.' not in b"".join(older_members.values())
    assert b'"model": "elion.' not in b"".join(older_members.values())
    older = rewritten(path, older_members, reseal=True)

    result = fresh_instance.restore(older)
    assert result.returncode == 0, result.stderr
    restored = fresh_instance.answers()
    for label, rows in original["rows"].items():
        assert restored["rows"][label] == rows, label
    assert {f"transcript.{name}" for name in MOVED_TO_TRANSCRIPT} - {"transcript.attachmentblobidentity"} <= set(
        restored["rows"]
    )
    assert {f"elion.{name}" for name in MOVED_TO_ELION} <= set(restored["rows"])
    assert original["rows"]["elion.character"], "the instance has a character, restored under elion.character"
    assert restored["stored_prompts"] == original["stored_prompts"]
    for path_, answer in original["api"].items():
        assert restored["api"][path_] == answer, path_
