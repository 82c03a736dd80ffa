"""ChatGPT exports of every shape, fault isolation, every branch, images and hidden context (issue 21)."""

from __future__ import annotations

import hashlib
import json

import pytest

from archive.models import ArchiveAttachment, ArchiveChunk, ArchiveDocument
from archive.sending import tools as archive_tools
from archive.services.blobs import archive_store
from archive.services.import_runs import PROBLEMS_LISTED
from archive.services.importers.chatgpt import parse as chatgpt
from elion.models import AssistantSettings
from tests.archive import chatgpt_export as export
from tests.archive.conftest import make_zip
from tests.support.json_fields import WRONG_TYPES, read_outcomes
from transcript.attachments import store

pytestmark = pytest.mark.django_db

IMPORT = "/api/archive/import/chatgpt/"
SUGGESTION = (
    f"About me:\n{export.PROFILE}\n\nHow to respond:\n{export.INSTRUCTIONS}"
)


def post(client, *files):
    return client.post(IMPORT, {"file": list(files)})


def archived() -> list[tuple]:
    """Everything an import stored, independent of ids and insertion times."""
    return sorted(
        (c.document.title, c.position, c.branch, c.turn, c.role, c.text)
        for c in ArchiveChunk.objects.select_related("document")
    )


def counts(body: dict) -> dict:
    return {k: body[k] for k in ("conversations", "messages", "alternate_messages", "skipped", "duplicates")}


# --- Every shape ---------------------------------------------------------------------------------


def test_every_shape_of_the_same_export_stores_the_same_archive(client, upload, export_zip, split_export_zip):
    shapes = {
        "zip with conversations.json": [upload("export.zip", export_zip)],
        "zip with split members and an index": [upload("export.zip", split_export_zip)],
        "zip with split members, no index": [upload("e.zip", make_zip({
            **export.split_members(with_index=False), **export.images()}))],
        "split files as several parts": [
            upload(name, data) for name, data in export.split_members(with_index=False).items()
        ],
        "conversations.json": [upload("conversations.json", export.as_json(export.conversations()))],
    }
    stored = {}
    for shape, files in shapes.items():
        ArchiveDocument.objects.all().delete()
        response = post(client, *files)
        assert response.status_code == 200, (shape, response.content)
        assert counts(response.json()) == {
            "conversations": 2, "messages": 7, "alternate_messages": 4, "skipped": 1, "duplicates": 0,
        }, shape
        stored[shape] = archived()
    reference = stored.pop("conversations.json")
    assert len(reference) == 11
    for shape, chunks in stored.items():
        assert chunks == reference, shape


def test_a_single_conversation_object_is_one_conversation(client, upload):
    response = post(client, upload("harbour.json", export.as_json(export.harbour())))
    assert response.status_code == 200, response.content
    body = response.json()
    assert counts(body)["conversations"] == 1
    assert ArchiveDocument.objects.get().title == "Harbour at dusk"


def test_split_members_are_read_in_number_order_with_indexes_across_them(client, upload):
    items = export.conversations()
    members = {  # numbered out of order in the zip, 10 after 2
        "conversations-010.json": export.as_json([items[2]]),
        "conversations-002.json": export.as_json(items[:2]),
    }
    body = post(client, upload("e.zip", make_zip(members))).json()
    assert [(p["index"], p["file"], p["title"]) for p in body["problems"]] == [
        (0, "conversations-002.json", "Harbour at dusk"),  # its images: this zip holds none
        (1, "conversations-002.json", "Broken tide"),
    ]
    titles = list(ArchiveDocument.objects.order_by("id").values_list("title", flat=True))
    assert titles == ["Harbour at dusk", "Morning pages"]


def test_reimporting_in_another_shape_finds_every_conversation_already_archived(client, upload, export_zip,
                                                                               split_export_zip):
    post(client, upload("export.zip", export_zip))
    before = (ArchiveDocument.objects.count(), ArchiveChunk.objects.count(), ArchiveAttachment.objects.count())
    again = post(client, upload("export.zip", split_export_zip)).json()
    assert counts(again) == {"conversations": 0, "messages": 0, "alternate_messages": 0, "skipped": 1,
                             "duplicates": 2}
    assert (ArchiveDocument.objects.count(), ArchiveChunk.objects.count(),
            ArchiveAttachment.objects.count()) == before


# --- Fault isolation -----------------------------------------------------------------------------


def test_an_unreadable_conversation_is_skipped_and_named_the_rest_imported(client, upload):
    items = export.conversations()
    items.insert(0, {"title": ["not", "text"], "mapping": {"x": "not a node"}, "current_node": "x"})
    items.append("not even an object")
    items.append({"title": "Nul\u0000 inside", "mapping": {}, "current_node": None})
    body = post(client, upload("conversations.json", json.dumps(items).encode())).json()
    assert body["conversations"] == 2 and body["skipped"] == 4
    assert [(p["index"], p["title"], p["reason"]) for p in body["problems"] if "image" not in p["reason"]] == [
        (0, "", "it refers to a message node that is missing"),
        (2, "Broken tide", "it has no message mapping"),
        (4, "", "it is not a JSON object"),
        (5, "Nul inside", "it holds a NUL character or an unpaired surrogate"),
    ]


def test_problems_listed_are_bounded_while_skipped_counts_every_one(client, upload):
    items = [export.morning(), *[{"title": f"junk {n}"} for n in range(PROBLEMS_LISTED + 500)]]
    body = post(client, upload("conversations.json", json.dumps(items).encode())).json()
    assert body["conversations"] == 1 and body["skipped"] == PROBLEMS_LISTED + 500
    assert len(body["problems"]) == PROBLEMS_LISTED
    assert body["problems"][0] == {"index": 1, "title": "junk 0", "reason": "it has no message mapping",
                                   "file": "conversations.json"}


def test_a_file_of_junk_items_is_refused_before_it_is_read_to_the_end(client, upload):
    junk = b"[" + b"{}," * 200_000 + b"{}]"
    response = post(client, upload("conversations.json", junk))
    assert response.status_code == 400 and response.json()["error"] == "malformed_chatgpt_export"


def test_a_damaged_member_refuses_the_whole_import_and_stores_nothing(client, upload):
    good = upload("conversations-000.json", export.as_json([export.harbour()]))
    cut = upload("conversations-001.json", export.as_json([export.morning()])[:-40])
    response = post(client, good, cut)
    assert response.status_code == 400 and response.json()["error"] == "malformed_chatgpt_export"
    assert not ArchiveDocument.objects.exists()


@pytest.mark.parametrize("wrong", WRONG_TYPES)
def test_every_field_of_a_conversation_may_hold_any_type_without_a_5xx(wrong):
    """Each value in the written conversation, replaced by each JSON type: read, or named as a problem."""

    original = export.harbour()
    outcomes = read_outcomes(chatgpt.read_conversation, chatgpt.UnreadableConversation, original, wrong)
    assert outcomes == {"ExportedConversation", "problem"}


# --- Every branch --------------------------------------------------------------------------------


def test_the_current_branch_is_the_document_and_every_other_branch_is_kept_as_alternate(client, upload,
                                                                                          export_zip):
    post(client, upload("export.zip", export_zip))
    harbour = ArchiveDocument.objects.get(title="Harbour at dusk")
    current = list(harbour.chunks.filter(branch="current").values_list("turn", "role", "text"))
    assert current == [
        (1, "user", "Shall we walk to the harbour?"),
        (2, "assistant", "The harbour is close; we walk at dusk."),  # the regeneration, not the first child
        (3, "user", "Here is the pier."),
        (4, "assistant", "High water is at 19:40; I drew the pier at dusk for you."),
        (5, "user", "What colour is the water there?"),  # the in_progress reply after it said nothing yet
    ]
    alternate = list(harbour.chunks.filter(branch="alternate").values_list("turn", "role", "text"))
    assert alternate == [
        (2, "assistant", "FIRSTREPLY the harbour is far tonight."),
        (3, "user", "ALTERNATE boats in the bay?"),
        (4, "assistant", "ALTERNATE the boats sail at noon."),
        (5, "user", "ALTERNATE what colour was the sky?"),
    ]
    # Alternate turns are chunks after the current ones; the document's text is the current branch only.
    assert min(c.position for c in harbour.chunks.filter(branch="alternate")) == 6
    for absent in ("FIRSTREPLY", "ALTERNATE", "TIDE RESULTS", "harbour tide tables", "the pier at dusk\"}"):
        assert absent not in harbour.text
        assert not harbour.chunks.filter(text__contains=absent, branch="current").exists()


def test_search_results_and_the_models_tool_say_which_branch(client, upload, export_zip):
    post(client, upload("export.zip", export_zip))
    (left,) = client.get("/api/archive/search/", {"q": "firstreply"}).json()["results"]
    assert left["branch"] == "alternate" and left["document_title"] == "Harbour at dusk" and left["chunk"] == 6
    (seen,) = client.get("/api/archive/search/", {"q": "close dusk"}).json()["results"]
    assert seen["branch"] == "current" and seen["chunk"] == 2
    tool_answer = json.loads(archive_tools.search_archive({"query": "boats bay"}, None))
    assert [r["branch"] for r in tool_answer["results"]] == ["alternate"]


def test_the_document_detail_marks_each_chunk_with_its_branch(client, upload, export_zip):
    post(client, upload("export.zip", export_zip))
    harbour = ArchiveDocument.objects.get(title="Harbour at dusk")
    detail = client.get(f"/api/archive/documents/{harbour.pk}/").json()
    assert [c["branch"] for c in detail["chunk_list"]] == ["current"] * 5 + ["alternate"] * 4
    assert detail["chunks"] == 9


# --- Images --------------------------------------------------------------------------------------


def test_images_are_resolved_against_the_zip_stored_by_content_and_listed(client, upload, export_zip):
    body = post(client, upload("export.zip", export_zip)).json()
    harbour = ArchiveDocument.objects.get(title="Harbour at dusk")
    listed = client.get(f"/api/archive/documents/{harbour.pk}/").json()["attachments"]
    expected = [
        (export.BOAT_PNG, f"{export.BOAT_ID}-boat.png", "image/png", 3, "alternate"),
        (export.PIER_JPEG, f"{export.PIER_ID}-pier.jpeg", "image/jpeg", 3, "current"),
        (export.DUSK_WEBP, f"{export.DUSK_ID}-7c1e9b.webp", "image/webp", 3, "current"),
    ]
    assert sorted((a["name"], a["mime"], a["size"], a["turn"], a["branch"], a["sha256"]) for a in listed) == sorted(
        (name, mime, len(data), turn, branch, hashlib.sha256(data).hexdigest())
        for data, name, mime, turn, branch in expected
    )
    for data, *_ in expected:
        sha = hashlib.sha256(data).hexdigest()
        assert store.read_verified(archive_store(), sha, len(data)) == data
        served = client.get(f"/api/archive/documents/{harbour.pk}/attachments/{sha}/")
        assert served.status_code == 200 and served.content == data
        assert served["X-Content-Type-Options"] == "nosniff"
    # The decoy whose name only starts with the pier's id was not taken for it.
    assert hashlib.sha256(export.DECOY_PNG).hexdigest() not in {a["sha256"] for a in listed}
    # The image the zip lacks is a problem, never a placeholder.
    (missing,) = [p for p in body["problems"] if export.LOST_ID in p["reason"]]
    assert missing["title"] == "Harbour at dusk" and missing["index"] == 0
    assert export.LOST_ID not in json.dumps(listed)
    assert harbour.chunks.filter(text__contains="image").count() == 0


def test_images_without_the_zip_are_reported_missing_not_invented(client, upload):
    body = post(client, upload("conversations.json", export.as_json(export.conversations()))).json()
    (problem,) = [p for p in body["problems"] if p["title"] == "Harbour at dusk"]
    assert "4 image(s) are not in the upload" in problem["reason"]
    assert not ArchiveAttachment.objects.exists()
    assert not archive_store().exists()


def test_one_image_in_two_documents_is_one_blob(client, upload):
    second = export.harbour()
    second["conversation_id"] = "another"
    second["title"] = "Harbour again"
    zip_bytes = make_zip({"conversations.json": export.as_json([export.harbour(), second]), **export.images()})
    post(client, upload("export.zip", zip_bytes))
    assert ArchiveAttachment.objects.count() == 6
    assert len(list(store.blobs_in(archive_store()))) == 3


def test_an_image_whose_bytes_are_no_image_or_too_large_is_a_problem(client, upload, settings):
    settings.ELION_ATTACHMENT_MAX_BYTES = 200
    members = {**export.images(), f"{export.PIER_ID}-pier.jpeg": b"not an image at all"}
    body = post(client, upload("e.zip", make_zip({"conversations.json": export.as_json([export.harbour()]),
                                                  **members}))).json()
    reasons = " | ".join(p["reason"] for p in body["problems"])
    assert "is not a PNG, JPEG, GIF or WebP image" in reasons
    assert "larger than the limit" in reasons  # the 260-byte generated image
    assert body["conversations"] == 1


def test_a_tampered_blob_is_not_served(client, upload, export_zip):
    post(client, upload("export.zip", export_zip))
    harbour = ArchiveDocument.objects.get(title="Harbour at dusk")
    sha = hashlib.sha256(export.PIER_JPEG).hexdigest()
    path = store.blob_path(archive_store(), sha)
    path.chmod(0o600)
    path.write_bytes(b"changed")
    response = client.get(f"/api/archive/documents/{harbour.pk}/attachments/{sha}/")
    assert response.status_code == 409 and response.json()["error"] == "attachment_unavailable"
    assert client.get(f"/api/archive/documents/{harbour.pk}/attachments/{'0' * 64}/").status_code == 404
    assert client.get(f"/api/archive/documents/{harbour.pk}/attachments/..%2F..%2Fx/").status_code == 404


def test_the_document_page_shows_the_images_and_the_other_branches(client, upload, export_zip):
    post(client, upload("export.zip", export_zip))
    harbour = ArchiveDocument.objects.get(title="Harbour at dusk")
    page = client.get(f"/archive/{harbour.pk}/").content.decode()
    for data in (export.PIER_JPEG, export.DUSK_WEBP, export.BOAT_PNG):
        assert f"/api/archive/documents/{harbour.pk}/attachments/{hashlib.sha256(data).hexdigest()}/" in page
    assert "Other branches" in page and "FIRSTREPLY" in page
    assert page.index("FIRSTREPLY") > page.index("What colour is the water there?")


# --- Hidden context ------------------------------------------------------------------------------


def test_custom_instructions_are_never_speech_and_are_offered_once(client, upload, export_zip):
    body = post(client, upload("export.zip", export_zip)).json()
    # The newest conversation's instructions (the harbour's, newer than the undated morning pages).
    assert body["custom_instructions_suggestion"] == SUGGESTION
    for hidden in (export.PROFILE, export.INSTRUCTIONS, export.OLD_ABOUT_ME, export.OLD_ABOUT_MODEL):
        assert not ArchiveChunk.objects.filter(text__contains=hidden).exists(), hidden
        assert not ArchiveDocument.objects.filter(text__contains=hidden).exists(), hidden
    morning = ArchiveDocument.objects.get(title="Morning pages")
    assert list(morning.chunks.values_list("role", flat=True)) == ["user", "assistant"]
    # Nothing is saved until the owner confirms, through Settings.
    assert AssistantSettings.objects.get_or_create(pk=1)[0].custom_instructions == ""
    saved = client.patch("/api/settings/", {"custom_instructions": body["custom_instructions_suggestion"]},
                         content_type="application/json")
    assert saved.status_code == 200 and saved.json()["custom_instructions"] == SUGGESTION
    # Settings hold them now: the next import does not offer them again.
    again = post(client, upload("export.zip", export_zip)).json()
    assert again["custom_instructions_suggestion"] is None


def test_older_custom_instructions_are_read_from_their_hidden_message(client, upload):
    body = post(client, upload("conversations.json", export.as_json([export.morning()]))).json()
    assert body["custom_instructions_suggestion"] == (
        f"About me:\n{export.OLD_ABOUT_ME}\n\nHow to respond:\n{export.OLD_ABOUT_MODEL}"
    )
    assert body["problems"] == []


def test_queries_per_imported_conversation_do_not_grow_with_the_export(client, upload):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def harbours(count, start):
        items = []
        for n in range(start, start + count):
            item = export.harbour()
            item["conversation_id"], item["title"] = f"c-{n}", f"Harbour {n}"
            items.append(item)
        return make_zip({"conversations.json": export.as_json(items), **export.images()})

    post(client, upload("e.zip", harbours(1, 900)))  # the first request creates the settings row
    queries = []
    for count, start in ((2, 0), (4, 100), (8, 200)):
        with CaptureQueriesContext(connection) as captured:
            assert post(client, upload("e.zip", harbours(count, start))).json()["conversations"] == count
        queries.append(len(captured))
    per_conversation = (queries[1] - queries[0]) / 2
    # Two look-ups by content hash, then one transaction (savepoint, document, chunks, images, release).
    assert per_conversation == 7
    assert queries[2] - queries[1] == 4 * per_conversation  # the same cost for each one


def test_continuing_an_imported_conversation_carries_only_its_current_branch(client, upload, export_zip):
    """The other branches are searchable, never carried: "Continue in a new chat" hands off the branch
    ending at `current_node` (issue "Moving in and out": continuity rules unchanged)."""
    post(client, upload("export.zip", export_zip))
    harbour = ArchiveDocument.objects.get(title="Harbour at dusk")
    response = client.post(
        f"/api/archive/documents/{harbour.pk}/continue/", "{}", content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="continue-harbour",
    )
    assert response.status_code == 201, response.content
    bubble = client.get(f"/api/conversations/{response.json()['id']}/messages/").json()["results"][0]["content"]
    assert "High water is at 19:40" in bubble and "The harbour is close; we walk at dusk." in bubble
    for alternate in ("FIRSTREPLY", "ALTERNATE"):
        assert alternate not in bubble


def member_method_set(data: bytes, name: str, method: int) -> bytes:
    """The zip with `name`'s compression method replaced in its local and central headers."""
    data = bytearray(data)
    for signature, offset, name_at in ((b"PK\x03\x04", 8, 30), (b"PK\x01\x02", 10, 46)):
        at = data.find(signature)
        while data[at + name_at : at + name_at + len(name)] != name.encode():
            at = data.find(signature, at + 1)
        data[at + offset : at + offset + 2] = method.to_bytes(2, "little")
    return bytes(data)


def test_a_conversations_member_in_an_unknown_compression_is_a_400_not_a_500(client, upload):
    zipped = make_zip({"conversations.json": export.as_json(export.conversations())})
    response = post(client, upload("export.zip", member_method_set(zipped, "conversations.json", 99)))
    assert response.status_code == 400 and response.json()["error"] == "bad_zip"
    assert not ArchiveDocument.objects.exists()


def test_an_image_damaged_inside_the_zip_is_a_problem_and_the_rest_is_imported(client, upload):
    pier = f"{export.PIER_ID}-pier.jpeg"
    members = {"conversations.json": export.as_json(export.conversations()), **export.images()}
    zipped = member_method_set(make_zip(members), pier, 99)  # the pier image cannot be decompressed
    body = post(client, upload("export.zip", zipped)).json()
    (damaged,) = [p for p in body["problems"] if "damaged in the zip" in p["reason"]]
    assert pier in damaged["reason"] and damaged["title"] == "Harbour at dusk"
    harbour = ArchiveDocument.objects.get(title="Harbour at dusk")
    names = {a["name"] for a in client.get(f"/api/archive/documents/{harbour.pk}/").json()["attachments"]}
    assert pier not in names and f"{export.DUSK_ID}-7c1e9b.webp" in names


def test_a_conversation_nested_thousands_deep_is_a_problem_in_bounded_memory(client, upload):
    """Hostile input: 40 KB of nested arrays cost ijson's recursive builder about 1 GB; the depth-bounded
    builder (`archive.services.json_values`) reads it to its end, never builds it, and the rest imports."""
    import tracemalloc

    deep = "[" * 20_000 + "]" * 20_000
    good = json.dumps(export.conversations()[0])
    body = f"[{good}, {{\"title\": \"Deep\", \"mapping\": {deep}}}, {deep}]".encode()
    tracemalloc.start()
    try:
        response = post(client, upload("conversations.json", body))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["conversations"] == 1
    assert answer["skipped"] == 2
    deep_ones = [(p["index"], p["reason"]) for p in answer["problems"] if "image" not in p["reason"]]
    assert deep_ones == [(1, "it is nested deeper than 64 levels"), (2, "it is nested deeper than 64 levels")]
    assert peak < 50 * 1024 * 1024, peak
