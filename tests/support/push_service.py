"""A Web Push service on loopback, written for the tests: it plays the push service and the browser behind it.

    with PushService() as service:
        browser = service.subscribe()            # a browser's key pair and auth secret, and its endpoint
        api_call(client, "post", "/api/push/subscriptions/", browser.subscription_json(), status=201)
        notify_owner(title=..., url=..., tag=...)
        [push] = service.received                # what pywebpush really sent, decrypted

It receives pywebpush's real HTTP request (nothing of pywebpush is mocked) and checks it as a push service
does (RFC 8030, 8291, 8292): the `Authorization: vapid t=<JWT>, k=<key>` header, the JWT's ES256 signature
against `k`, its `aud` (this service's origin), `exp` (in the future, at most 24 hours ahead) and `sub`
(a `mailto:` or `https:` contact); `TTL`; `Content-Encoding: aes128gcm`. Then it decrypts the body with the
subscribed browser's private key and auth secret (`http_ece`, `cryptography`), as the browser would, and
keeps the plaintext. A request that fails any check is answered 400 or 403 and kept with its `problem`.

Each endpoint answers 201 unless its browser's `answers` holds scripted statuses (404, 410, 500, ...), used
one per request.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class PushBrowser:
    """The browser's side of one subscription: its ECDH key pair and auth secret (RFC 8291)."""

    endpoint: str
    private_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    auth_secret: bytes = field(default_factory=lambda: secrets.token_bytes(16))
    answers: deque[int] = field(default_factory=deque)

    @property
    def p256dh(self) -> str:
        point = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return b64url(point)

    def subscription_json(self) -> dict:
        """What `PushSubscription.toJSON()` gives in a browser."""
        return {"endpoint": self.endpoint, "expirationTime": None,
                "keys": {"p256dh": self.p256dh, "auth": b64url(self.auth_secret)}}

    def decrypt(self, body: bytes) -> bytes:
        return http_ece.decrypt(body, private_key=self.private_key, auth_secret=self.auth_secret, version="aes128gcm")


@dataclass
class ReceivedPush:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int
    claims: dict | None = None
    vapid_key: str = ""
    plaintext: bytes | None = None
    problem: str = ""

    @property
    def payload(self) -> dict:
        assert self.plaintext is not None, self.problem
        return json.loads(self.plaintext)


class PushCheckFailed(Exception):
    def __init__(self, status: int, problem: str) -> None:
        super().__init__(problem)
        self.status = status
        self.problem = problem


_CONTACT = re.compile(r"^(mailto:[^@\s]+@[^@\s]+|https://\S+)$")


def verified_vapid(authorization: str, origin: str) -> tuple[dict, str]:
    """The JWT's claims and the signing key, or PushCheckFailed: what a push service checks (RFC 8292)."""
    match = re.fullmatch(r"vapid\s+t=([^,\s]+)\s*,\s*k=([A-Za-z0-9_-]+)", authorization.strip(), re.IGNORECASE)
    if not match:
        raise PushCheckFailed(401, f"no vapid Authorization header: {authorization!r}")
    token, key = match.groups()
    try:
        header_part, claims_part, signature_part = token.split(".")
        header = json.loads(unb64url(header_part))
        claims = json.loads(unb64url(claims_part))
        public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(key))
        signature = unb64url(signature_part)
    except (ValueError, json.JSONDecodeError) as exc:
        raise PushCheckFailed(401, f"malformed JWT or key: {exc}") from exc
    if header.get("alg") != "ES256" or header.get("typ", "JWT") != "JWT":
        raise PushCheckFailed(401, f"JWT header is not ES256: {header}")
    if len(signature) != 64:
        raise PushCheckFailed(401, "ES256 signature is not 64 bytes")
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        public_key.verify(der, f"{header_part}.{claims_part}".encode("ascii"), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature as exc:
        raise PushCheckFailed(403, "JWT signature does not verify with k") from exc
    if claims.get("aud") != origin:
        raise PushCheckFailed(403, f"aud {claims.get('aud')!r} is not {origin!r}")
    now = time.time()
    exp = claims.get("exp")
    if not isinstance(exp, int) or exp <= now or exp > now + 24 * 60 * 60:
        raise PushCheckFailed(403, f"exp {exp!r} is not within the next 24 hours")
    if not isinstance(claims.get("sub"), str) or not _CONTACT.match(claims["sub"]):
        raise PushCheckFailed(403, f"sub {claims.get('sub')!r} is not a mailto: or https: contact")
    return claims, key


class PushService:
    def __init__(self) -> None:
        self.received: list[ReceivedPush] = []
        self.browsers: dict[str, PushBrowser] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def subscribe(self) -> PushBrowser:
        token = secrets.token_urlsafe(16)
        browser = PushBrowser(endpoint=f"{self.origin}/push/{token}")
        with self._lock:
            self.browsers[token] = browser
        return browser

    def clear(self) -> None:
        with self._lock:
            self.received.clear()

    def _handle(self, path: str, headers: dict[str, str], body: bytes) -> ReceivedPush:
        token = path.removeprefix("/push/")
        browser = self.browsers.get(token)
        push = ReceivedPush(path=path, headers=headers, body=body, status=201)
        try:
            if browser is None:
                raise PushCheckFailed(404, "no such subscription")
            push.claims, push.vapid_key = verified_vapid(headers.get("authorization", ""), self.origin)
            if not headers.get("ttl", "").isdigit():
                raise PushCheckFailed(400, "TTL header missing")
            if headers.get("content-encoding") != "aes128gcm":
                raise PushCheckFailed(400, f"Content-Encoding {headers.get('content-encoding')!r}")
            try:
                push.plaintext = browser.decrypt(body)
            except Exception as exc:  # noqa: BLE001 - any decryption error is the sender's fault here
                raise PushCheckFailed(400, f"payload does not decrypt: {exc!r}") from exc
            if browser.answers:
                push.status = browser.answers.popleft()
        except PushCheckFailed as failed:
            push.status, push.problem = failed.status, failed.problem
        return push

    def __enter__(self) -> PushService:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {name.lower(): value for name, value in self.headers.items()}
                push = service._handle(self.path, headers, body)
                with service._lock:
                    service.received.append(push)
                self.send_response(push.status)
                message = push.problem.encode()
                self.send_header("Content-Length", str(len(message)))
                if push.status == 201:
                    self.send_header("Location", f"{service.origin}/message/{secrets.token_urlsafe(8)}")
                self.end_headers()
                self.wfile.write(message)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
