"""An export sent in pieces (`archive.services.upload_pieces`, issue 21): the ASGI server holds a request's whole
body in memory, so the import page sends a large export as bounded pieces, then starts the background
import from the uploaded files. A piece sent twice is refused, never appended twice."""

from __future__ import annotations

import json

import pytest

from archive.models import ArchiveDocument
from tests.support.import_jobs import COUNTS, IMPORT, job_url
from tests.support.upload_pieces import (
    UPLOADS,
    begin,
    put,
    send_in_pieces,
)

pytestmark = pytest.mark.django_db


def test_an_export_sent_in_pieces_imports_as_the_same_export_sent_whole(
    client, upload, export_zip, pieces_dir, django_capture_on_commit_callbacks, run_queued  # noqa: F811
):
    upload_id = send_in_pieces(client, "export.zip", export_zip)
    assert (pieces_dir / upload_id / "data").read_bytes() == export_zip
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"{IMPORT}?background=true", {"upload_ids": [upload_id], "collection": "conversations"},
            content_type="application/json",
        )
    assert response.status_code == 202, response.content
    job_id = response.json()["job_id"]
    assert not (pieces_dir / upload_id).exists()  # the job holds its own copy
    assert run_queued() == ["done"]
    in_pieces = client.get(job_url(job_id)).json()
    assert in_pieces["files"] == [{"name": "export.zip", "size": len(export_zip)}]
    ArchiveDocument.objects.all().delete()
    whole = client.post(IMPORT, {"file": [upload("export.zip", export_zip)]}).json()
    assert {k: in_pieces[k] for k in COUNTS} == {k: whole[k] for k in COUNTS}
    assert in_pieces["conversations"] == 2


def test_a_piece_sent_twice_is_refused_and_the_upload_says_where_to_go_on(client, pieces_dir):
    upload_id = begin(client, "conversations.json", 10)["upload_id"]
    assert put(client, upload_id, 0, b"[{}, ").status_code == 200
    again = put(client, upload_id, 0, b"[{}, ")
    assert again.status_code == 409 and again.json()["error"] == "upload_offset_mismatch"
    assert client.get(f"{UPLOADS}{upload_id}/").json()["received"] == 5
    assert put(client, upload_id, 7, b"{}]").json()["error"] == "upload_offset_mismatch"
    assert put(client, upload_id, 5, b"{}]  ").json()["received"] == 10
    assert (pieces_dir / upload_id / "data").read_bytes() == b"[{}, {}]  "


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"name": "x.zip", "size": 0}, 400, "invalid_size"),
        ({"name": "x.zip", "size": True}, 400, "invalid_size"),
        ({"name": "x.zip", "size": "12"}, 400, "invalid_size"),
        ({"name": "", "size": 5}, 400, "invalid_name"),
        ({"name": ["x"], "size": 5}, 400, "invalid_name"),
        ({"name": "nul\u0000.zip", "size": 5}, 400, "invalid_characters"),
        ({"name": "x" * 301, "size": 5}, 400, "invalid_name"),
        ({"name": "x.zip", "size": 10**15}, 413, "file_too_large"),
    ],
)
def test_beginning_an_upload_checks_its_name_and_size(client, pieces_dir, body, status, code):
    response = client.post(UPLOADS, json.dumps(body), content_type="application/json")
    assert response.status_code == status and response.json()["error"] == code


def test_pieces_that_are_too_large_past_the_size_or_of_unknown_uploads_are_4xx(client, pieces_dir):
    upload_id = begin(client, "c.json", 2000)["upload_id"]
    assert put(client, upload_id, 0, b"x" * 1025).status_code == 413  # over ELION_UPLOAD_PIECE_BYTES
    assert put(client, upload_id, 0, b"").json()["error"] == "invalid_offset"
    assert put(client, upload_id, "-1", b"x").json()["error"] == "invalid_offset"
    assert put(client, upload_id, "one", b"x").json()["error"] == "invalid_offset"
    small = begin(client, "c.json", 3)["upload_id"]
    assert put(client, small, 0, b"abcd").json()["error"] == "piece_beyond_size"
    for unknown in ("00000000-0000-0000-0000-000000000000", "not-an-id"):
        assert put(client, unknown, 0, b"x").status_code == 404
        assert client.get(f"{UPLOADS}{unknown}/").status_code == 404
    assert client.get(f"{UPLOADS}{upload_id}/").json()["received"] == 0  # nothing refused was kept


@pytest.mark.parametrize("upload_ids", [[], "abc", [1], ["x"] * 65])
def test_an_import_of_pieces_names_finished_uploads(client, pieces_dir, upload_ids):
    response = client.post(f"{IMPORT}?background=true", {"upload_ids": upload_ids}, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_upload_ids"


def test_an_unfinished_upload_is_not_imported(client, pieces_dir):
    upload_id = begin(client, "c.json", 10)["upload_id"]
    put(client, upload_id, 0, b"[")
    response = client.post(
        f"{IMPORT}?background=true", {"upload_ids": [upload_id]}, content_type="application/json"
    )
    assert response.status_code == 409 and response.json()["error"] == "upload_incomplete"
    assert client.get(f"{UPLOADS}{upload_id}/").json()["received"] == 1
