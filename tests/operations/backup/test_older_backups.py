"""A backup made before a column existed restores: a manifest entry's `conversation` (migration
conversations 0015) is filled from its message; a backup whose entry names another conversation
than its message's is refused, as the app refuses to write one. A backup made while a stored prompt's stale
mark was a column of its conversation (before transcript 0005) restores each mark as its row."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from django.test import Client

from tests.support.attachment_files import png_bytes
from tests.support.backup_files import backup_file, members_of, rewritten
from tests.support.factories import prompts_marked, thread
from tests.support.fork import fork
from tests.support.manifests import sent_with
from transcript.models import Message, MessageAttachment

pytestmark = pytest.mark.django_db(transaction=True)

ENTRIES = "models/transcript.messageattachment.jsonl"
COLUMN_MIGRATION = "0015_manifest_conversation"
RESTORED_ENTRIES = (
    "import json; from transcript.models import MessageAttachment; "
    "print(json.dumps([[pk, str(c)] for pk, c in "
    "MessageAttachment.objects.order_by('pk').values_list('pk', 'conversation_id')]))"
)


def with_entries(path: Path, members: dict[str, bytes], edit, *, migrations_drop: str | None = None) -> Path:
    """The backup with every manifest entry's line passed through `edit`, its manifest updated and resealed."""
    lines = [json.loads(line) for line in members[ENTRIES].decode().splitlines()]
    data = "".join(json.dumps(edit(row)) + "\n" for row in lines).encode()
    manifest = json.loads(members["manifest.json"])
    manifest["members"][ENTRIES] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    if migrations_drop is not None:
        manifest["migrations"]["conversations"].remove(migrations_drop)
    return rewritten(path, {**members, ENTRIES: data, "manifest.json": json.dumps(manifest).encode()}, reseal=True)


def without_conversation(row: dict) -> dict:
    fields = {name: value for name, value in row["fields"].items() if name != "conversation"}
    return {**row, "fields": fields}


def an_instance_with_manifests(client: Client) -> list[list]:
    """Two conversations with manifests (a send of an image and a file, and a fork of it); their entries."""
    source = thread(("user", "Hello."), ("assistant", "Hi."))
    sent_with(source, ("photo.png", png_bytes()), ("notes.md", b"# Notes\n"))
    source.refresh_from_db()
    assert fork(client, source, Message.objects.get(pk=source.head_id)).status_code == 201
    entries = [[pk, str(c)] for pk, c in MessageAttachment.objects.order_by("pk").values_list("pk", "conversation_id")]
    assert len(entries) == 4 and len({c for _, c in entries}) == 2
    return entries


def test_a_backup_made_before_entries_knew_their_conversation_restores_with_each_filled(
    client, tmp_path, fresh_instance
):
    entries = an_instance_with_manifests(client)
    path = backup_file(tmp_path)
    members = members_of(path)
    assert all("conversation" in json.loads(line)["fields"] for line in members[ENTRIES].decode().splitlines())
    older = with_entries(path, members, without_conversation, migrations_drop=COLUMN_MIGRATION)

    result = fresh_instance.restore(older)
    assert result.returncode == 0, result.stderr
    restored = fresh_instance.manage("shell", "-c", RESTORED_ENTRIES).stdout.strip().splitlines()[-1]
    assert json.loads(restored) == entries


def test_a_backup_whose_entry_names_another_conversation_is_refused(client, tmp_path, fresh_instance):
    entries = an_instance_with_manifests(client)
    path = backup_file(tmp_path)
    members = members_of(path)
    moved, elsewhere = entries[0][0], entries[-1][1]

    def misplaced(row: dict) -> dict:
        return {**row, "fields": {**row["fields"], "conversation": elsewhere}} if row["pk"] == moved else row

    refused = fresh_instance.restore(with_entries(path, members, misplaced))
    assert refused.returncode != 0
    assert "The backup's attachment manifests do not fit its messages" in refused.stderr
    assert fresh_instance.restore(path).returncode == 0  # nothing was left behind by the refused one


MARKS = "models/transcript.staleprompt.jsonl"
MARKS_MIGRATION = "0005_stale_prompts_in_their_own_rows"
RESTORED_MARKS = (
    "import json; from transcript.models import StalePrompt; "
    "print(json.dumps(sorted(str(pk) for pk in StalePrompt.objects.values_list('pk', flat=True))))"
)


def as_before_marks_had_rows(path: Path, members: dict[str, bytes]) -> Path:
    """The backup as the version before transcript 0005 wrote it: no stale-mark member, each conversation row
    with its `prompt_stale` field, and no 0005 in the manifest's migrations."""
    marked = {json.loads(line)["pk"] for line in members[MARKS].decode().splitlines()}
    conversations = "models/transcript.conversation.jsonl"
    lines = [json.loads(line) for line in members[conversations].decode().splitlines()]
    data = "".join(
        json.dumps({**row, "fields": {**row["fields"], "prompt_stale": row["pk"] in marked}}) + "\n" for row in lines
    ).encode()
    manifest = json.loads(members["manifest.json"])
    manifest["members"][conversations] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    manifest["members"].pop(MARKS)
    manifest["models"] = [entry for entry in manifest["models"] if entry["member"] != MARKS]
    manifest["migrations"]["transcript"].remove(MARKS_MIGRATION)
    older = {name: value for name, value in members.items() if name != MARKS}
    return rewritten(path, {**older, conversations: data, "manifest.json": json.dumps(manifest).encode()}, reseal=True)


def test_a_backup_made_before_stale_marks_had_rows_restores_each_mark(client, tmp_path, fresh_instance):
    marked, unmarked = thread(("user", "Hello."), ("assistant", "Hi.")), thread(("user", "Hey."), ("assistant", "Yo."))
    prompts_marked([marked])
    path = backup_file(tmp_path)
    members = members_of(path)
    assert str(marked.pk) in members[MARKS].decode() and str(unmarked.pk) not in members[MARKS].decode()

    result = fresh_instance.restore(as_before_marks_had_rows(path, members))
    assert result.returncode == 0, result.stderr
    restored = fresh_instance.manage("shell", "-c", RESTORED_MARKS).stdout.strip().splitlines()[-1]
    assert json.loads(restored) == [str(marked.pk)]
