"""Hardening round two over a real Daphne process: bodies refused unread, every 4xx in the JSON shape.

Each test is named after the rule it proves (issue "Hardening, round two").
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest

from tests.support.live_server import LiveApp

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "correct horse battery"
TOKEN = "script-token"
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def protected_app(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        app = LiveApp({"ELION_OWNER_PASSWORD": PASSWORD, "ELION_API_TOKEN": TOKEN}).start()
    yield app
    app.stop()


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)


def _raw_request(app: LiveApp, head: str, body_bytes: int = 0) -> tuple[int, dict, bytes]:
    """Send the head, read the answer before sending any body, then send `body_bytes` of body anyway."""
    with socket.create_connection(("127.0.0.1", app.port), timeout=30) as sock:
        sock.sendall(head.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        head_part, _, rest = answer.partition(b"\r\n\r\n")
        lines = head_part.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        while len(rest) < int(headers.get("content-length", "0")):
            rest += sock.recv(65536)
        sent, piece = 0, b"x" * MIB
        try:
            while sent < body_bytes:
                sock.sendall(piece)
                sent += len(piece)
        except OSError:
            pass  # the server may close once it has answered
        return int(lines[0].split()[1]), headers, rest


def _upload_head(path: str, length: int, auth: str = "") -> str:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n"
        f"Content-Length: {length}\r\n{auth}\r\n"
    )


def test_a_body_without_credentials_is_refused_before_it_is_read(protected_app):
    pid = protected_app.process.pid
    before = _status_kib(pid, "VmHWM")
    status, headers, body = _raw_request(protected_app, _upload_head("/api/attachments/", 300 * MIB), 48 * MIB)
    assert status == 401
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["error"] == "authentication_required"
    # 48 MiB went over the wire after the answer; the process kept none of it.
    assert _status_kib(pid, "VmHWM") - before < 16 * 1024


def test_a_body_over_its_routes_limit_is_refused_before_it_is_read(protected_app):
    pid = protected_app.process.pid
    before = _status_kib(pid, "VmHWM")
    auth = f"Authorization: Bearer {TOKEN}\r\n"
    status, headers, body = _raw_request(protected_app, _upload_head("/api/attachments/", 300 * MIB, auth), 48 * MIB)
    assert status == 413
    assert json.loads(body)["error"] == "request_too_large"
    assert _status_kib(pid, "VmHWM") - before < 16 * 1024


def test_a_chunked_body_over_its_routes_limit_is_cut_off(protected_app):
    def chunks():
        for _ in range(40):
            yield b"y" * MIB

    with httpx.Client(timeout=30) as client:
        response = client.post(
            f"{protected_app.base_url}/api/archive/documents/", content=chunks(),
            headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/octet-stream"},
        )
    assert response.status_code == 413
    assert response.json()["error"] == "request_too_large"


def test_a_page_post_without_credentials_is_sent_to_the_login_page_unread(protected_app):
    status, headers, _body = _raw_request(
        protected_app,
        "POST /memories/import/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {300 * MIB}\r\n\r\n",
    )
    assert status == 303 and headers["location"].startswith("/login/?next=")


def test_a_login_form_over_the_limit_is_refused_before_it_is_read(protected_app):
    status, _headers, body = _raw_request(
        protected_app,
        "POST /api/auth/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: {300 * MIB}\r\n\r\n",
    )
    assert status == 413 and json.loads(body)["error"] == "request_too_large"


def test_a_request_line_over_16_kib_is_answered_414(protected_app):
    status, headers, body = _raw_request(
        protected_app, f"GET /api/health/?q={'a' * 20_000} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    assert status == 414 and json.loads(body)["error"] == "request_line_too_long"


BODY_ROUTES = [
    "/api/conversations/", "/api/attachments/", "/api/memories/", "/api/archive/documents/",
    "/api/library/files/", "/api/auth/login/", "/api/settings/", "/api/folders/",
]


def test_every_4xx_has_the_json_error_shape_a_multipart_body_without_a_boundary_included(protected_app):
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        for path in BODY_ROUTES:
            response = client.post(
                f"{protected_app.base_url}{path}", content=b"--x\r\n", headers={"Content-Type": "multipart/form-data"}
            )
            assert 400 <= response.status_code < 500, (path, response.status_code)
            assert response.headers["content-type"] == "application/json", path
            assert set(response.json()) == {"error", "detail"}, path
        page = client.post(
            f"{protected_app.base_url}/memories/import/", content=b"--x\r\n",
            headers={"Content-Type": "multipart/form-data"},
        )
    assert page.status_code == 400 and page.text == "The request body could not be parsed."
