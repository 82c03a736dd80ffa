"""A backup restored into a fresh database and data dir answers every API request as the original did."""

from __future__ import annotations

import pytest
from django.test import Client

from operations.backup.members import backed_up_models, model_label
from tests.operations.backup.conftest import backup_bytes, build_rich_instance, manifest_of
from tests.support.instance_answers import instance_answers

pytestmark = pytest.mark.django_db(transaction=True)


def test_restored_instance_answers_every_request_and_rebuilds_every_prompt_byte_for_byte(
    scripted_provider, fresh_instance, tmp_path
):
    client = Client()
    ids = build_rich_instance(client, scripted_provider)
    data = backup_bytes(client)
    path = tmp_path / "backup.zip"
    path.write_bytes(data)
    original = instance_answers()

    result = fresh_instance.restore(path)
    assert result.returncode == 0, result.stderr
    restored = fresh_instance.answers()

    # Every row of every backed-up model, every concrete field (all branches, statuses, bindings, retired columns).
    assert set(restored["rows"]) == {model_label(m) for m in backed_up_models()}
    for label, rows in original["rows"].items():
        assert restored["rows"][label] == rows, label
    assert restored["stored_prompts"] == original["stored_prompts"]
    assert restored["rebuilt_prompts"] == original["rebuilt_prompts"]
    assert set(restored["api"]) == set(original["api"])
    for path_, answer in original["api"].items():
        assert restored["api"][path_] == answer, path_

    # The instance really was rich: the comparison above covered branches, blobs, hidden and shielded chats.
    counts = {entry["model"]: entry["count"] for entry in manifest_of(data)["models"]}
    assert counts["transcript.message"] > counts["transcript.conversation"] * 2
    assert counts["transcript.attachment"] == 4 and counts["continuity.compaction"] == 1
    assert counts["continuity.threadhandoff"] >= 2 and counts["memories.memory"] == 2
    assert manifest_of(data)["blobs"] >= 4
    conversations = {c["id"]: c for c in original["api"]["/api/conversations/?trashed=all"]["results"]}
    assert conversations[ids["shielded"]]["shielded"] and conversations[ids["trashed"]]["trashed"]
    assert any(r["shielded"] for r in original["api"]["/api/search/?q=lighthouse&include_shielded=true"]["results"])
    assert original["api"]["/api/archive/search/?q=lighthouse"]["results"]
    assert '"summary": "retired summary"' in original["rows"]["continuity.threadhandoff"]
    assert counts["artifacts.artifact"] == 1 and counts["archive.archiveattachment"] >= 1
    assert any(name.startswith("blobs/archive/") for name in manifest_of(data)["members"])


def test_restored_instance_hands_out_ids_after_the_restored_ones(scripted_provider, fresh_instance, client, tmp_path):
    build_rich_instance(client, scripted_provider)
    path = tmp_path / "backup.zip"
    path.write_bytes(backup_bytes(client))
    assert fresh_instance.restore(path).returncode == 0
    # PostgreSQL's sequences were moved past the explicit ids: new rows get fresh ones (SQLite does this by itself).
    created = fresh_instance.manage("shell", "-c", (
        "from django.db.models import Max; "
        "from transcript.models import Folder; from elion.models import Character; from memories.models import Memory; "
        "from archive.models import LibraryFile; "
        "rows = [(M, M.objects.aggregate(m=Max('pk'))['m'], M.objects.create(**kw).pk) for M, kw in ["
        "(Folder, {'name': 'New'}), (Character, {'name': 'New'}), (Memory, {'text': 'New', 'position': 99}), "
        "(LibraryFile, {'name': 'n', 'kind': 'text', 'sha256': '0' * 64, 'size': 1, 'text': 'n'})]]; "
        "print(all(new > old for _, old, new in rows), [(M.__name__, old, new) for M, old, new in rows])"
    ))
    assert created.stdout.strip().splitlines()[-1].startswith("True ["), created.stdout
