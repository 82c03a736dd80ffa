"""Sending an export in pieces through the uploads API, as the import page does."""

from __future__ import annotations

import pytest

UPLOADS = "/api/archive/uploads/"


@pytest.fixture
def pieces_dir(settings, tmp_path):
    settings.ELION_IMPORT_DIR = tmp_path / "imports"
    settings.ELION_UPLOAD_PIECE_BYTES = 1024
    return settings.ELION_IMPORT_DIR / "pieces"


def begin(client, name: str, size: int, status: int = 201) -> dict:
    response = client.post(UPLOADS, {"name": name, "size": size}, content_type="application/json")
    assert response.status_code == status, response.content
    return response.json()


def put(client, upload_id: str, offset: object, data: bytes):
    return client.put(f"{UPLOADS}{upload_id}/?offset={offset}", data, content_type="application/octet-stream")


def send_in_pieces(client, name: str, data: bytes, piece: int = 1024) -> str:
    upload_id = begin(client, name, len(data))["upload_id"]
    for offset in range(0, len(data), piece):
        response = put(client, upload_id, offset, data[offset:offset + piece])
        assert response.status_code == 200, response.content
        assert response.json()["received"] == min(offset + piece, len(data))
    return upload_id
