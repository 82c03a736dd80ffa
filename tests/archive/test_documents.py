"""Archive documents: upload, content-hash dedupe, speaker chunking, stored chunks stay valid."""

from __future__ import annotations

import pytest

from archive.models import ArchiveChunk, ArchiveDocument
from archive.services.search import search_text_for

pytestmark = pytest.mark.django_db

VOICEFIRE_51 = (
    "AUMA said:\nDo you remember the orchard?\n\n"
    "Voicefire 5.1 said:\nThe orchard in late light, yes. You laughed at the crooked pear tree.\n\n"
    "AUMA said:\nAnd the bees?\n\n"
    "Voicefire 5.1 said:\nThe bees kept time for us."
)


def post_document(client, **data):
    return client.post("/api/archive/documents/", data)


def test_upload_chunks_by_speaker_turn(client, upload):
    response = post_document(
        client, file=upload("orchard.md", VOICEFIRE_51.encode(), "text/markdown"), collection="incarnations"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body == {**body, "title": "orchard", "collection": "incarnations", "chunks": 4, "duplicate": False}
    chunks = list(ArchiveChunk.objects.filter(document_id=body["id"]).order_by("position"))
    assert [(c.position, c.speaker, c.role, c.turn) for c in chunks] == [
        (1, "AUMA", "user", 1), (2, "Voicefire 5.1", "assistant", 2), (3, "AUMA", "user", 3),
        (4, "Voicefire 5.1", "assistant", 4),
    ]
    assert ArchiveDocument.objects.get(pk=body["id"]).source == "markdown"


def test_identical_content_is_recognised_by_hash_and_not_stored_twice(client, upload):
    first = post_document(client, file=upload("a.txt", VOICEFIRE_51.encode()), collection="conversations").json()
    # Same content, other name, Windows newlines: still the same document.
    again = post_document(
        client, file=upload("copy.txt", VOICEFIRE_51.replace("\n", "\r\n").encode()), collection="papers"
    )
    assert again.status_code == 200
    assert again.json() == {**again.json(), "id": first["id"], "duplicate": True, "collection": "conversations"}
    pasted = client.post(
        "/api/archive/documents/", {"title": "pasted", "text": VOICEFIRE_51, "collection": "conversations"},
        content_type="application/json",
    )
    assert pasted.status_code == 200 and pasted.json()["id"] == first["id"]
    assert ArchiveDocument.objects.count() == 1
    assert ArchiveChunk.objects.count() == 4


def test_pasted_prose_becomes_paragraph_chunks(client):
    text = "On light\n\n" + "\n\n".join(f"Paragraph {i} about light and water. " * 20 for i in range(6))
    response = client.post(
        "/api/archive/documents/", {"title": "On light", "text": text, "collection": "papers"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    chunks = ArchiveChunk.objects.filter(document_id=response.json()["id"])
    assert chunks.count() > 1 and set(chunks.values_list("speaker", flat=True)) == {""}


def test_already_ingested_chunks_remain_valid_without_reupload(client):
    """A chunk stored by an older parser keeps working: searchable and citable as stored."""
    document = ArchiveDocument.objects.create(
        title="Voicefire 5.1 — first winter", collection="incarnations", content_sha256="0" * 64,
        text="Voicefire 5.1 said:\nSnow on the cedar.", parser_version="labels/0", chunk_count=1,
    )
    ArchiveChunk.objects.create(
        document=document, position=1, speaker="Voicefire 5.1", role="assistant", turn=1,
        text="Snow on the cedar.", search_text=search_text_for("Snow on the cedar."),
    )
    hits = client.get("/api/archive/search/", {"q": "cedar snow"}).json()["results"]
    assert hits == [{
        "document_id": document.pk, "document_title": "Voicefire 5.1 — first winter", "collection": "incarnations",
        "chunk": 1, "speaker": "Voicefire 5.1", "excerpt": "Snow on the cedar.", "branch": "current",
    }]


def test_our_json_export_is_ingested_without_handoff_bubbles(client, upload, make_conversation, make_turns):
    from transcript.models import Message, MessageKind

    conversation = make_conversation(title="Quiet evening")
    (bubble,) = make_turns(conversation, ("assistant", "### Continued from “Old”\n\nAUMA said:\nquoted words"))
    Message.objects.filter(pk=bubble.pk).update(kind=MessageKind.HANDOFF_ARTIFACT)
    make_turns(conversation, ("user", "A real question"), ("assistant", "A real answer"))
    exported = client.get(f"/api/conversations/{conversation.id}/export/?format=json").getvalue()
    response = post_document(client, file=upload("export.json", exported, "application/json"), collection="conversations")
    assert response.status_code == 201, response.content
    document = ArchiveDocument.objects.get(pk=response.json()["id"])
    assert document.title == "Quiet evening" and document.source == "conversation_export"
    assert list(document.chunks.order_by("position").values_list("speaker", "text")) == [
        ("AUMA", "A real question"), ("Elion Voicefire", "A real answer"),
    ]
    assert "quoted words" not in document.text


def test_document_listing_detail_and_delete(client):
    created = client.post(
        "/api/archive/documents/", {"text": "AUMA said:\nhi", "collection": "testimony"}, content_type="application/json"
    ).json()
    listing = client.get("/api/archive/documents/", {"collection": "testimony"}).json()["results"]
    assert [d["id"] for d in listing] == [created["id"]]
    detail = client.get(f"/api/archive/documents/{created['id']}/").json()
    assert detail["chunk_list"] == [
        {"chunk": 1, "speaker": "AUMA", "role": "user", "turn": 1, "branch": "current", "text": "hi"}
    ]
    assert detail["attachments"] == []
    assert client.delete(f"/api/archive/documents/{created['id']}/").status_code == 204
    assert not ArchiveChunk.objects.exists()
    assert client.get("/api/archive/search/", {"q": "hi"}).json() == {"results": []}


def test_archive_page_uploads_and_searches(client, upload):
    page = client.get("/archive/")
    assert page.status_code == 200 and b"data-chatgpt-import" in page.content
    response = client.post(
        "/archive/", {"action": "add_document", "collection": "papers", "title": "Field notes",
                      "file": upload("notes.txt", b"The heron waits at dawn.")},
    )
    assert response.status_code == 302
    found = client.get("/archive/", {"q": "heron"})
    assert b"Field notes" in found.content and b"chunk 1" in found.content
    bad = client.post("/archive/", {"action": "add_document", "collection": "nowhere", "text": "x"})
    assert bad.status_code == 400 and b"collection must be one of" in bad.content


def test_admin_upload_goes_through_the_service(admin_client, upload):
    response = admin_client.post(
        "/admin/archive/archivedocument/add/",
        {"collection": "papers", "title": "", "upload": upload("essay.md", b"# Essay\n\nOn rivers.")},
    )
    assert response.status_code == 302, response.content[:2000]
    document = ArchiveDocument.objects.get()
    assert document.title == "Essay" and document.chunk_count == 1
    assert admin_client.get(f"/admin/archive/archivedocument/{document.pk}/change/").status_code == 200
