"""Fixtures for the archive and Library: the ChatGPT export fixture, zips, a tiny PDF."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from tests.archive import chatgpt_export as export

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def chatgpt_json() -> bytes:
    """A small realistic export: edits, a regeneration, a tool round, hidden context, an image part."""
    return (FIXTURES / "chatgpt_conversations.json").read_bytes()


def make_zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture
def chatgpt_zip(chatgpt_json) -> bytes:
    """The export zip as ChatGPT ships it: conversations.json beside other files."""
    return make_zip({
        "conversations.json": chatgpt_json,
        "user.json": json.dumps({"id": "user-1", "email": "auma@example.invalid"}).encode(),
        "chat.html": b"<html><body>export</body></html>",
        "file-abc.png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 32,
    })


def minimal_pdf(text: str) -> bytes:
    """A one-page PDF whose content stream draws `text` in Helvetica (ASCII only)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


@pytest.fixture
def upload():
    from django.core.files.uploadedfile import SimpleUploadedFile

    def make(name: str, data: bytes, content_type: str = "application/octet-stream"):
        return SimpleUploadedFile(name, data, content_type=content_type)

    return make


@pytest.fixture(autouse=True)
def archive_blob_root(settings, tmp_path_factory):
    """Images of imported conversations go to a throwaway attachment root."""
    settings.ELION_ATTACHMENT_ROOT = tmp_path_factory.mktemp("attachments")
    return settings.ELION_ATTACHMENT_ROOT


@pytest.fixture
def export_zip() -> bytes:
    """The written export (tests/archive/chatgpt_export.py) as one conversations.json beside its images."""
    return make_zip({
        "conversations.json": export.as_json(export.conversations()),
        "user.json": b'{"id": "user-1"}',
        "chat.html": b"<html><body>export</body></html>",
        **export.images(),
    })


@pytest.fixture
def split_export_zip() -> bytes:
    """The same export split into conversations-000.json and -001.json, with an index file."""
    return make_zip({**export.split_members(with_index=True), **export.images()})
