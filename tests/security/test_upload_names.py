"""Upload filenames are names, never paths.

A multipart filename carrying directory parts (`../`, `..\\`, an absolute path) is reduced to its
last component before the archive or the Library sees it, so nothing is stored or written under a
path the client chose; a name that is nothing but `.`/`..` is no file at all and is refused.
The bodies are built by hand: Django's test client would strip the directories itself.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.conf import settings

from archive.models import ArchiveDocument, LibraryFile

pytestmark = pytest.mark.django_db

TRAVERSING_NAMES = [
    "../../../../tmp/elion-proof-evil.md",
    "..\\..\\..\\elion-proof-evil.md",
    "/etc/elion-proof-evil.md",
    "C:\\Windows\\elion-proof-evil.md",
    "notes/../../elion-proof-evil.md",
]


def multipart(filename: str, data: bytes, **fields: str) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
        f"Content-Type: text/markdown\r\n\r\n".encode() + data + b"\r\n"
    )
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def post_file(client, url: str, filename: str, data: bytes, **fields: str):
    body, content_type = multipart(filename, data, **fields)
    return client.generic("POST", url, body, content_type=content_type)


def nothing_written_outside(name: str = "elion-proof-evil.md") -> None:
    for directory in (Path("/tmp"), Path("/etc"), Path(settings.DATA_DIR), Path(settings.DATA_DIR).parent):
        assert not (directory / name).exists(), directory


@pytest.mark.parametrize("filename", TRAVERSING_NAMES)
def test_archive_upload_filename_with_a_path_keeps_only_the_last_component(client, filename):
    response = post_file(client, "/api/archive/documents/", filename, b"# Evil\n\nSome words " + filename.encode(),
                         collection="papers")
    assert response.status_code == 201, response.content
    document = ArchiveDocument.objects.get(pk=response.json()["id"])
    assert document.source_name == "elion-proof-evil.md"
    assert "/" not in document.title and "\\" not in document.title and ".." not in document.title
    nothing_written_outside()


@pytest.mark.parametrize("filename", TRAVERSING_NAMES)
def test_library_upload_filename_with_a_path_keeps_only_the_last_component(client, filename):
    response = post_file(client, "/api/library/files/", filename, b"Plain words " + filename.encode())
    assert response.status_code == 201, response.content
    assert LibraryFile.objects.get(pk=response.json()["id"]).name == "elion-proof-evil.md"
    nothing_written_outside()


@pytest.mark.parametrize("filename", ["..", ".", "../..", "..\\"])
@pytest.mark.parametrize("url", ["/api/archive/documents/", "/api/library/files/"])
def test_upload_whose_filename_is_only_a_path_is_refused(client, url, filename):
    response = post_file(client, url, filename, b"words", collection="papers")
    assert response.status_code == 400
    assert response.json()["error"] == "missing_file"
    assert not ArchiveDocument.objects.exists() and not LibraryFile.objects.exists()
