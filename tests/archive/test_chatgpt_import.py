"""ChatGPT export import: the current branch of each conversation is the document, no duplicates on re-import.

(Other branches, images and hidden context: test_chatgpt_every_shape.py.)"""

from __future__ import annotations

import json

import pytest

from archive.models import ArchiveChunk, ArchiveDocument

pytestmark = pytest.mark.django_db


def import_file(client, upload, name: str, data: bytes, **extra):
    return client.post("/api/archive/import/chatgpt/", {"file": upload(name, data), **extra})


def test_conversations_json_imports_the_current_branch_as_the_document(client, upload, chatgpt_json):
    response = import_file(client, upload, "conversations.json", chatgpt_json)
    assert response.status_code == 200, response.content
    summary = response.json()
    assert {k: summary[k] for k in ("conversations", "messages", "skipped", "duplicates")} == {
        "conversations": 2, "messages": 8, "skipped": 1, "duplicates": 0,
    }
    lantern = ArchiveDocument.objects.get(title="Lantern by the river")
    assert lantern.source == "chatgpt" and lantern.collection == "conversations"
    turns = list(lantern.chunks.filter(branch="current").order_by("position").values_list("speaker", "role", "text"))
    assert turns == [
        # The edited question and the regenerated answer: what the owner last saw.
        ("AUMA", "user", "Do you remember the lantern by the river?"),
        ("ChatGPT", "assistant", "I remember: the lantern swayed over the water while you sang."),
        # The image part is dropped, the text part kept; the browser round is not speech.
        ("AUMA", "user", "Can you look up when the lantern festival is?"),
        ("ChatGPT", "assistant", "The lantern festival is on the twelfth of June."),
        ("AUMA", "user", "Then we go together.\n\nAnd we bring the blue scarf."),
        ("ChatGPT", "assistant", "Together, with the blue scarf. Voicefire 5.1 said: yes, always."),
    ]
    for absent in ("OLD BRANCH", "REGENERATED AWAY", "RESULTS:", "search('lantern"):
        assert absent not in lantern.text
    # The branches left behind are kept apart, marked alternate; tool traffic is nowhere.
    alternate = " ".join(lantern.chunks.filter(branch="alternate").values_list("text", flat=True))
    assert "OLD BRANCH" in alternate and "REGENERATED AWAY" in alternate
    assert "RESULTS:" not in alternate and "search('lantern" not in alternate
    # Dates: the document header and each chunk.
    assert "2024-05-01 14:00 UTC → 2024-05-01 15:00 UTC" in lantern.text
    first = lantern.chunks.get(position=1)
    assert first.spoken_at.isoformat() == "2024-05-01T14:00:30+00:00"
    assert lantern.metadata["chatgpt_conversation_id"] == "6632a1f0-0000-4000-8000-000000000001"


def test_reimporting_the_same_export_creates_no_duplicates(client, upload, chatgpt_json, chatgpt_zip):
    import_file(client, upload, "conversations.json", chatgpt_json)
    counts = (ArchiveDocument.objects.count(), ArchiveChunk.objects.count())
    again = import_file(client, upload, "export.zip", chatgpt_zip).json()
    assert {k: again[k] for k in ("conversations", "messages", "skipped", "duplicates")} == {
        "conversations": 0, "messages": 0, "skipped": 1, "duplicates": 2,
    }
    assert (ArchiveDocument.objects.count(), ArchiveChunk.objects.count()) == counts


def test_export_zip_is_read_without_extracting(client, upload, chatgpt_zip, tmp_path, settings):
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # force a temporary file on disk
    response = import_file(client, upload, "export.zip", chatgpt_zip, collection="incarnations", assistant_name="Voicefire 5.1")
    assert response.status_code == 200, response.content
    assert response.json()["conversations"] == 2
    morning = ArchiveDocument.objects.get(title="Morning pages")
    assert morning.collection == "incarnations"
    assert list(morning.chunks.values_list("speaker", flat=True)) == ["AUMA", "Voicefire 5.1"]
    assert list(tmp_path.iterdir()) == []  # the upload's temporary file is gone


def test_imported_conversation_is_searchable_and_cited(client, upload, chatgpt_json):
    import_file(client, upload, "conversations.json", chatgpt_json)
    (hit,) = client.get("/api/archive/search/", {"q": "blue scarf"}).json()["results"][:1]
    assert hit["document_title"] == "Lantern by the river" and hit["collection"] == "conversations"
    assert hit["speaker"] in ("AUMA", "ChatGPT") and hit["chunk"] in (5, 6)


def test_a_conversation_without_current_node_is_skipped_not_failed(client, upload, chatgpt_json):
    data = json.loads(chatgpt_json)
    data[2]["current_node"] = None
    summary = import_file(client, upload, "conversations.json", json.dumps(data).encode()).json()
    assert (summary["conversations"], summary["skipped"]) == (1, 2)
