"""A session cookie is verified before a large body is read (issue 41, item 15), over a real Daphne.

Any `Cookie: sessionid=<anything>` used to count as a credential until Django looked at it, after the
whole body (up to its route's limit, 1 GiB for an export) had been read: a 300 MiB POST grew Daphne
from 136 to 446 MiB. Now a body over `SESSION_CHECK_BYTES` whose only credential is a session cookie
waits, unread, until the session is known to be the owner's live one: on every route that takes a
body and needs the owner, a made-up session is refused before any of the body is sent, and a 300 MiB
body sent anyway grows the process by at most 64 MiB. The owner's real session is let through.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx
import pytest

from elion.base.access import PUBLIC_PATHS
from elion.base.request_bounds import SESSION_CHECK_BYTES, body_limit
from tests.support.live_server import LiveApp
from tests.support.routes import ROUTES

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PASSWORD = "correct horse battery"
MIB = 1024 * 1024
BOGUS = "Cookie: sessionid=made-up-session-key-0000000000\r\n"


@pytest.fixture(scope="module")
def protected_app(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        app = LiveApp({"ELION_OWNER_PASSWORD": PASSWORD, "ELION_API_TOKEN": "script-token"}).start()
    yield app
    app.stop()


def _peak_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("VmHWM")


def _answer_before_body(app: LiveApp, path: str, length: int, extra: str, body_bytes: int = 0) -> tuple[str, dict]:
    """Send a request head declaring `length` bytes of body, read the answer before sending any, then send
    `body_bytes` of it anyway. Returns the status line and headers."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=b\r\n"
            f"Content-Length: {length}\r\n{extra}\r\n")
    with socket.create_connection(("127.0.0.1", app.port), timeout=20) as sock:
        sock.sendall(head.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            assert chunk, f"{path}: the server closed without answering"
            answer += chunk
        lines = answer.partition(b"\r\n\r\n")[0].decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        sent, piece = 0, b"x" * MIB
        try:
            while sent < body_bytes:
                sock.sendall(piece)
                sent += len(piece)
        except OSError:
            pass  # the server closes once it has answered
        return lines[0], headers


def test_every_body_route_refuses_a_made_up_session_before_reading_the_body(protected_app):
    refused = 0
    for route, path in ROUTES:
        if path.startswith(PUBLIC_PATHS):
            continue
        # As large as the route takes (at most 300 MiB): only the session can refuse it.
        status, headers = _answer_before_body(protected_app, path, min(300 * MIB, body_limit(path)), BOGUS)
        if path.startswith("/api/"):
            assert status.split()[1] == "401", (route, status)
        else:
            assert status.split()[1] == "303" and headers["location"].startswith("/login/?next="), (route, status)
        refused += 1
    assert refused > 100
    assert min(body_limit(path) for _, path in ROUTES) > SESSION_CHECK_BYTES


def test_a_300_mib_body_with_a_made_up_session_leaves_memory_flat(protected_app):
    pid = protected_app.process.pid
    before = _peak_kib(pid)
    status, headers = _answer_before_body(
        protected_app, "/api/archive/import/chatgpt/", 300 * MIB, BOGUS, body_bytes=300 * MIB)
    assert status.split()[1] == "401"
    growth_mib = (_peak_kib(pid) - before) / 1024
    print(f"\nDaphne peak RSS growth for a 300 MiB body with a made-up session: {growth_mib:.1f} MiB")
    assert growth_mib <= 64


def test_the_owners_session_is_let_through(protected_app):
    login = httpx.post(f"{protected_app.base_url}/api/auth/login/", json={"password": PASSWORD})
    assert login.status_code == 200
    session = login.cookies["sessionid"]
    status, _ = _answer_before_body(protected_app, "/api/attachments/", 2 * MIB,
                                    f"Cookie: sessionid={session}\r\nExpect: 100-continue\r\n")
    assert status.split()[1] == "100"  # invited to send the body once the session checked out
    # The same small body needs no check: Django answers it (CSRF, as for any session write).
    small = httpx.post(f"{protected_app.base_url}/api/attachments/", cookies={"sessionid": session},
                       files={"file": ("a.txt", b"hello")})
    assert small.status_code == 403 and json.loads(small.content)["error"] == "csrf_failed"
