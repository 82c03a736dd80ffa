"""The ASGI layer bounds request bodies in process, for any ASGI server: a body without credentials is refused
before Django reads it, a chunked body is cut off at its route's limit. (Over a real Daphne:
test_bounded_requests.py.)"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery"


@pytest.fixture
def protected(settings):
    settings.ELION_OWNER_PASSWORD = PASSWORD
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True
    return settings


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
