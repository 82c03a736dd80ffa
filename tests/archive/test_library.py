"""The Library: text, Markdown, CSV and PDF files for Elion to read, paged."""

from __future__ import annotations

import pytest

from archive.models import LibraryFile
from tests.archive.conftest import minimal_pdf

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "data", "kind", "text"),
    [
        ("notes.txt", b"plain words", "text", "plain words"),
        ("essay.md", b"# Title\n\nBody", "markdown", "# Title\n\nBody"),
        ("table.csv", b"name,age\r\nAUMA,33\r\n", "csv", "name,age\nAUMA,33\n"),
        ("paper.pdf", minimal_pdf("Light bends near water"), "pdf", "Light bends near water"),
    ],
)
def test_library_accepts_text_markdown_csv_and_pdf(client, upload, name, data, kind, text):
    response = client.post("/api/library/files/", {"file": upload(name, data)})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["kind"], body["size"], body["duplicate"]) == (name, kind, len(data), False)
    assert LibraryFile.objects.get(pk=body["id"]).text == text


def test_same_bytes_twice_are_one_file(client, upload):
    first = client.post("/api/library/files/", {"file": upload("a.txt", b"same")}).json()
    again = client.post("/api/library/files/", {"file": upload("b.txt", b"same")})
    assert again.status_code == 200 and again.json()["id"] == first["id"] and again.json()["duplicate"] is True
    assert LibraryFile.objects.count() == 1


def test_reading_a_file_is_paged(client):
    text = "".join(f"{i:05d}|" for i in range(4000))  # 24,000 characters
    created = client.post("/api/library/files/", {"name": "long.txt", "text": text}, content_type="application/json")
    assert created.status_code == 201
    file_id = created.json()["id"]
    pages, offset = [], 0
    while offset is not None:
        page = client.get(f"/api/library/files/{file_id}/", {"offset": offset, "limit": 10000}).json()
        pages.append(page["text"])
        offset = page["next_offset"]
    assert "".join(pages) == text and len(pages) == 3  # pages are at most 8,000 characters
    assert client.get(f"/api/library/files/{file_id}/", {"offset": -1}).status_code == 400
    listing = client.get("/api/library/files/").json()["results"]
    assert listing == [{**listing[0], "id": file_id, "name": "long.txt", "characters": 24000}]


def test_library_pages_and_admin(client, admin_client, upload):
    assert client.get("/library/").status_code == 200
    response = client.post("/library/", {"file": upload("poem.md", b"# Poem\n\nline")})
    assert response.status_code == 302
    file = LibraryFile.objects.get()
    page = client.get(f"/library/{file.pk}/")
    assert page.status_code == 200 and b"line" in page.content
    assert client.post("/library/", {"file": upload("x.png", b"\x89PNG")}).status_code == 400
    added = admin_client.post("/admin/archive/libraryfile/add/", {"name": "pasted", "pasted_text": "hello library"})
    assert added.status_code == 302
    assert LibraryFile.objects.filter(name="pasted", text="hello library").exists()
    assert client.post(f"/library/{file.pk}/delete/").status_code == 302
    assert not LibraryFile.objects.filter(pk=file.pk).exists()
