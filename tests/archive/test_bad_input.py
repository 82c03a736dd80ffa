"""Bad archive and Library input: a 4xx with a clear reason, nothing stored, no temp files left."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from archive.models import ArchiveChunk, ArchiveDocument, LibraryFile
from tests.archive.conftest import make_zip

pytestmark = pytest.mark.django_db

BINARY_JUNK = bytes(range(256)) * 8


@pytest.fixture(autouse=True)
def uploads_on_disk(settings, tmp_path):
    """Every upload goes through a temporary file, so leftovers would show."""
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0
    yield tmp_path
    assert list(tmp_path.iterdir()) == [], "an upload's temporary file was left behind"


def assert_refused(response, status: int, code: str):
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == code and body["detail"]
    assert not ArchiveDocument.objects.exists() and not ArchiveChunk.objects.exists()
    assert not LibraryFile.objects.exists()


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("junk.txt", BINARY_JUNK, "not_text"),
        ("latin1.txt", "café au lait".encode("latin-1"), "not_text"),
        ("empty.txt", b"", "empty_file"),
        ("blank.md", b"  \n\n\t\n", "empty_file"),
    ],
)
def test_document_upload_refuses_junk_and_empty_files(client, upload, name, data, code):
    response = client.post("/api/archive/documents/", {"file": upload(name, data), "collection": "papers"})
    assert_refused(response, 400, code)


def test_oversize_document_is_413(client, upload, settings):
    settings.ELION_ARCHIVE_MAX_FILE_BYTES = 1024
    response = client.post("/api/archive/documents/", {"file": upload("big.txt", b"a " * 600), "collection": "papers"})
    assert_refused(response, 413, "file_too_large")
    assert "1 KB" in response.json()["detail"]


def test_unknown_or_missing_collection_and_missing_file(client, upload):
    assert_refused(
        client.post("/api/archive/documents/", {"file": upload("a.txt", b"hello"), "collection": "diaries"}),
        400, "unknown_collection",
    )
    assert_refused(client.post("/api/archive/documents/", {"file": upload("a.txt", b"hello")}), 400, "unknown_collection")
    assert_refused(
        client.post("/api/archive/documents/", {"collection": "papers"}, content_type="application/json"),
        400, "missing_file",
    )


def chatgpt_import(client, upload, name, data):
    return client.post("/api/archive/import/chatgpt/", {"file": upload(name, data)})


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"{not json", "malformed_chatgpt_export"),
        (BINARY_JUNK, "malformed_chatgpt_export"),
        (b'{"conversations": []}', "malformed_chatgpt_export"),
        # Not one conversation in it: not an export at all.
        (b'[{"title": "no mapping"}]', "malformed_chatgpt_export"),
        (b"[1, 2, 3]", "malformed_chatgpt_export"),
        (b'"conversations"', "malformed_chatgpt_export"),
        (b"", "empty_file"),
    ],
)
def test_a_file_that_is_not_an_export_is_refused_whole(client, upload, chatgpt_json, data, code):
    assert_refused(chatgpt_import(client, upload, "conversations.json", data), 400, code)
    assert not ArchiveDocument.objects.exists()


def test_a_tree_that_cannot_be_walked_is_a_problem_not_a_refusal(client, upload):
    cyclic = {"title": "loop", "current_node": "a", "mapping": {
        "a": {"id": "a", "message": None, "parent": "b", "children": []},
        "b": {"id": "b", "message": None, "parent": "a", "children": []},
    }}
    gone = {"title": "gone", "mapping": {}, "current_node": "nowhere"}
    response = chatgpt_import(client, upload, "conversations.json", json.dumps([cyclic, gone]).encode())
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["skipped"] == 2 and body["conversations"] == 0
    assert [(p["index"], p["title"], p["reason"]) for p in body["problems"]] == [
        (0, "loop", "its message tree has a cycle"),
        (1, "gone", "it refers to a message node that is missing"),
    ]


@pytest.mark.parametrize("member", ["../evil.txt", "/etc/passwd", "a/../../b", "C:/windows/x", "dir\\..\\x"])
def test_zip_with_path_traversal_is_refused(client, upload, chatgpt_json, member):
    data = make_zip({"conversations.json": chatgpt_json, member: b"x"})
    assert_refused(chatgpt_import(client, upload, "export.zip", data), 400, "zip_unsafe_path")


def test_zip_with_too_many_members_is_refused(client, upload, chatgpt_json, settings):
    settings.ELION_ARCHIVE_IMPORT_MAX_MEMBERS = 10
    members = {"conversations.json": chatgpt_json, **{f"file-{i}.png": b"x" for i in range(10)}}
    assert_refused(chatgpt_import(client, upload, "export.zip", make_zip(members)), 400, "zip_too_many_members")


def test_zip_bomb_is_stopped_at_the_unpacked_size_cap(client, upload, settings):
    settings.ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES = 64 * 1024
    bomb = make_zip({"conversations.json": b"[" + b" " * (5 * 1024 * 1024) + b"]"})
    assert len(bomb) < 64 * 1024  # small on the wire, large unpacked
    assert_refused(chatgpt_import(client, upload, "export.zip", bomb), 413, "file_too_large")


def test_zip_that_lies_about_its_sizes_is_still_capped(client, upload, settings):
    settings.ELION_ARCHIVE_IMPORT_MAX_JSON_BYTES = 64 * 1024
    data = bytearray(make_zip({"conversations.json": b"[" + b" " * (1024 * 1024) + b"]"}))
    # Rewrite the declared uncompressed size (local header and central directory) to 10 bytes.
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        data[at + offset : at + offset + 4] = (10).to_bytes(4, "little")
    response = chatgpt_import(client, upload, "export.zip", bytes(data))
    assert response.status_code in (400, 413), response.content
    assert not ArchiveDocument.objects.exists()


def test_zip_without_conversations_json_or_damaged(client, upload):
    assert_refused(chatgpt_import(client, upload, "export.zip", make_zip({"chat.html": b"<html>"})), 400,
                   "missing_conversations_json")
    damaged = make_zip({"conversations.json": b"[]" * 100})[:-30]
    assert chatgpt_import(client, upload, "export.zip", damaged).status_code == 400


def test_oversize_export_upload_is_413(client, upload, chatgpt_json, settings):
    settings.ELION_ARCHIVE_IMPORT_MAX_BYTES = 100
    assert_refused(chatgpt_import(client, upload, "conversations.json", chatgpt_json), 413, "file_too_large")


def test_encrypted_member_is_refused(client, upload, chatgpt_json):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("conversations.json", chatgpt_json)
    data = bytearray(buffer.getvalue())
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        data[at + offset] |= 0x1  # the "encrypted" flag bit
    assert_refused(chatgpt_import(client, upload, "export.zip", bytes(data)), 400, "zip_encrypted")


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("junk.txt", BINARY_JUNK, "not_text"),
        ("empty.csv", b"", "empty_file"),
        ("fake.pdf", b"just text", "not_pdf"),
        ("broken.pdf", b"%PDF-1.4\nthis is not a pdf body", "unreadable_pdf"),
        ("photo.png", b"\x89PNG\r\n", "unsupported_file_type"),
    ],
)
def test_library_refuses_bad_files(client, upload, name, data, code):
    assert_refused(client.post("/api/library/files/", {"file": upload(name, data)}), 400, code)


def test_library_oversize_is_413(client, upload, settings):
    settings.ELION_ARCHIVE_MAX_FILE_BYTES = 10
    assert_refused(client.post("/api/library/files/", {"file": upload("a.txt", b"x" * 11)}), 413, "file_too_large")
