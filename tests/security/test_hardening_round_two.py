"""Hardening round two, in process: path segments checked before a query, client errors logged as one
line, the login throttle that keeps the owner able to get in. (Over a real Daphne: test_bounded_requests.py.)
"""

from __future__ import annotations

import json
import logging

import pytest
from django.test import Client

from archive.models import ArchiveDocument
from elion.base.rows import parse_sha256
from elion.models import LoginFailure

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery"


@pytest.fixture
def protected(settings):
    settings.ELION_OWNER_PASSWORD = PASSWORD
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True
    return settings


def test_a_nul_in_a_sha256_path_segment_is_a_json_404():
    document = ArchiveDocument.objects.create(title="t", collection="incarnations", content_sha256="0" * 64, text="t")
    for segment in ("%00", "a" * 63 + "%00", "A" * 64, "g" * 64, "%ED%A0%80"):
        response = Client().get(f"/api/archive/documents/{document.id}/attachments/{segment}/")
        assert response.status_code == 404, segment
        assert response.json()["error"].endswith("not_found")


def test_a_nul_in_any_path_segment_never_reaches_a_query(django_assert_num_queries):
    with django_assert_num_queries(0):
        response = Client().get("/api/conversations/%00/messages/")
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_parse_sha256_accepts_only_a_content_hash():
    digest = "0123456789abcdef" * 4
    assert parse_sha256(digest) == digest
    for bad in (digest.upper(), digest[:-1], digest + "0", digest[:-1] + "\x00", 7, None):
        assert parse_sha256(bad) is None


def test_expected_client_errors_log_one_line_not_a_traceback(caplog):
    many_fields = "&".join(f"f{i}=1" for i in range(2_000))
    with caplog.at_level(logging.INFO):
        form = Client().post("/memories/import/", many_fields, content_type="application/x-www-form-urlencoded")
        boundaryless = Client().post("/memories/import/", b"--x\r\n", content_type="multipart/form-data")
    assert form.status_code == 400 and boundaryless.status_code == 400
    assert [r for r in caplog.records if r.exc_info] == []
    refused = [r for r in caplog.records if r.getMessage().startswith("refused POST /memories/import/")]
    assert len(refused) == 2


def _login(client: Client, password: str, address: str = "10.9.0.1"):
    return client.post(
        "/api/auth/login/", json.dumps({"password": password}), content_type="application/json", REMOTE_ADDR=address
    )


def test_login_throttle_keeps_the_owner_able_to_get_in_from_a_locked_address(protected):
    owner = Client()
    assert _login(owner, PASSWORD).status_code == 200
    assert "elion_login_device" in owner.cookies
    owner.post("/logout/")
    guesser = Client()
    for _ in range(5):
        assert _login(guesser, "wrong").status_code == 401
    assert _login(guesser, PASSWORD).status_code == 429  # the address is locked for anyone without a device
    assert _login(owner, PASSWORD).status_code == 200  # the owner's browser still gets in
    assert owner.get("/api/settings/").status_code == 200


def test_login_throttle_keeps_the_owner_able_to_get_in_under_the_overall_lock(protected, monkeypatch):
    from elion.base import login_throttle

    monkeypatch.setattr(login_throttle, "OVERALL_THRESHOLD", 3)
    owner = Client()
    assert _login(owner, PASSWORD, address="10.9.1.1").status_code == 200
    for index in range(3):
        _login(Client(), "wrong", address=f"10.9.2.{index}")
    assert _login(Client(), PASSWORD, address="10.9.2.99").status_code == 429
    assert _login(owner, PASSWORD, address="10.9.1.1").status_code == 200


def test_login_throttle_a_devices_own_wrong_guesses_lock_that_device(protected):
    device = Client()
    assert _login(device, PASSWORD).status_code == 200
    for _ in range(5):
        assert _login(device, "wrong").status_code == 401
    refused = _login(device, PASSWORD)
    assert refused.status_code == 429 and 0 < int(refused["Retry-After"]) <= 60
    # Counted under the device only: the address and the overall count are untouched.
    assert not LoginFailure.objects.filter(key__in=["client:10.9.0.1", "all"]).exists()


def test_login_throttle_a_forged_device_cookie_counts_as_none(protected):
    for _ in range(5):
        _login(Client(), "wrong")
    forged = Client()
    forged.cookies["elion_login_device"] = "abc:def"
    assert _login(forged, PASSWORD).status_code == 429


def test_a_full_database_is_507_insufficient_storage():
    """SQLite's own "database or disk is full" (a page limit makes it real), as a library upload met it."""
    import sqlite3

    from django.db.utils import OperationalError

    from elion.base.database_errors import database_outage

    full = sqlite3.connect(":memory:")
    full.execute("PRAGMA max_page_count = 2")
    full.execute("CREATE TABLE t (x TEXT)")
    with pytest.raises(sqlite3.OperationalError) as raised:
        full.execute("INSERT INTO t VALUES (?)", ["x" * 100_000])
    try:
        raise OperationalError(str(raised.value)) from raised.value
    except OperationalError as wrapped:
        answer = database_outage(wrapped)
    assert (answer.status, answer.code) == (507, "insufficient_storage")


def _http_scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), *headers], "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
    }


@pytest.mark.asyncio
async def test_the_asgi_layer_refuses_a_body_without_credentials_before_django_reads_it(protected):
    """Any ASGI server, not only Daphne (whose parser refuses first): the body message is never received."""
    from asgiref.testing import ApplicationCommunicator

    from elion.asgi import application

    scope = _http_scope("/api/attachments/", [(b"content-length", str(300 * 1024 * 1024).encode()),
                                              (b"content-type", b"multipart/form-data; boundary=b")])
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b"x" * 65536, "more_body": True})
    start = await communicator.receive_output(5)
    body = await communicator.receive_output(5)
    assert start["status"] == 401
    assert json.loads(body["body"])["error"] == "authentication_required"
    assert communicator.input_queue.qsize() == 1  # the body was never read
    await communicator.wait(5)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_asgi_layer_cuts_a_chunked_body_off_at_its_routes_limit(protected):
    from asgiref.testing import ApplicationCommunicator

    from elion.asgi import application
    from elion.base.request_bounds import DEFAULT_BODY_BYTES

    scope = _http_scope("/api/settings/", [(b"transfer-encoding", b"chunked"),
                                           (b"authorization", b"Bearer script-token")])
    communicator = ApplicationCommunicator(application, scope)
    piece = b"x" * (1024 * 1024)
    for _ in range(DEFAULT_BODY_BYTES // len(piece) + 3):
        await communicator.send_input({"type": "http.request", "body": piece, "more_body": True})
    start = await communicator.receive_output(10)
    body = await communicator.receive_output(5)
    assert start["status"] == 413
    assert json.loads(body["body"])["error"] == "request_too_large"
    assert communicator.input_queue.qsize() >= 1  # what came after the limit was never read
    await communicator.wait(10)
