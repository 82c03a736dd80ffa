"""The browsers subscribed to Web Push: saved as the browser hands them over, listed, and removed.

A subscription is the JSON of the browser's `PushSubscription` (`{"endpoint", "keys": {"p256dh", "auth"}}`).
Everything in it is checked before it is stored, because the server later sends to it unattended: the endpoint
must be an https URL (plain http only to a loopback address, and only with `ELION_PUSH_HTTP_LOOPBACK` on, for
the tests' push service), ASCII, at most 2,000 characters, with no credentials; `p256dh` must be a point on P-256
(65 bytes, URL-safe base64) and `auth` a 16-byte secret. At most `MAX_SUBSCRIPTIONS` are kept.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from urllib.parse import urlsplit

from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings
from django.db import IntegrityError, transaction

from elion.base.errors import Conflict, InvalidInput, NotFound
from elion.models import PushSubscription

MAX_SUBSCRIPTIONS = 50
MAX_ENDPOINT_LENGTH = 2000
MAX_USER_AGENT_LENGTH = 200


def _decoded(value: object, name: str) -> bytes:
    if not isinstance(value, str) or not value or len(value) > 200:
        raise InvalidInput(f"keys.{name} must be a URL-safe base64 text.", code="invalid_push_keys")
    try:
        return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"keys.{name} is not URL-safe base64.", code="invalid_push_keys") from exc


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def push_endpoint_check(endpoint: object) -> str:
    if not isinstance(endpoint, str) or not endpoint:
        raise InvalidInput("endpoint must be the push service's URL.", code="invalid_push_endpoint")
    if len(endpoint) > MAX_ENDPOINT_LENGTH:
        raise InvalidInput(f"endpoint is longer than {MAX_ENDPOINT_LENGTH} characters.", code="invalid_push_endpoint")
    try:
        parts = urlsplit(endpoint)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - reading it checks it (a port out of range raises)
    except ValueError as exc:
        raise InvalidInput("endpoint is not a URL.", code="invalid_push_endpoint") from exc
    if not endpoint.isascii() or not endpoint.isprintable() or " " in endpoint:
        raise InvalidInput("endpoint must be an ASCII URL (as push services give them).", code="invalid_push_endpoint")
    if not host or parts.username or parts.password:
        raise InvalidInput("endpoint must be a plain https URL with a host.", code="invalid_push_endpoint")
    loopback_http = parts.scheme == "http" and settings.ELION_PUSH_HTTP_LOOPBACK and _is_loopback(host)
    if parts.scheme != "https" and not loopback_http:
        raise InvalidInput("endpoint must be an https URL.", code="invalid_push_endpoint")
    return endpoint


def push_keys_check(keys: object) -> tuple[str, str]:
    if not isinstance(keys, dict):
        raise InvalidInput("keys must be an object with p256dh and auth.", code="invalid_push_keys")
    p256dh, auth = keys.get("p256dh"), keys.get("auth")
    point = _decoded(p256dh, "p256dh")
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    except ValueError as exc:
        raise InvalidInput("keys.p256dh is not a P-256 public key.", code="invalid_push_keys") from exc
    if len(point) != 65:
        raise InvalidInput("keys.p256dh must be an uncompressed P-256 point.", code="invalid_push_keys")
    if len(_decoded(auth, "auth")) != 16:
        raise InvalidInput("keys.auth must be 16 bytes.", code="invalid_push_keys")
    return str(p256dh), str(auth)


def push_subscription_save(*, endpoint: object, keys: object, user_agent: object = "") -> tuple[PushSubscription, bool]:
    """Store a browser's subscription; the same endpoint again updates its keys (a browser re-subscribing)
    and returns `created` false. Raises InvalidInput (400) for anything malformed, Conflict (409) past
    `MAX_SUBSCRIPTIONS`."""
    endpoint = push_endpoint_check(endpoint)
    p256dh, auth = push_keys_check(keys)
    label = user_agent if isinstance(user_agent, str) else ""
    label = "".join(ch for ch in label if ch.isprintable())[:MAX_USER_AGENT_LENGTH]
    fields = {"p256dh": p256dh, "auth": auth, "user_agent": label}
    # Atomic with its count: two browsers subscribing at once cannot both pass the limit unseen.
    with transaction.atomic():
        updated = PushSubscription.objects.filter(endpoint=endpoint).update(**fields)
        if updated:
            return PushSubscription.objects.get(endpoint=endpoint), False
        if PushSubscription.objects.count() >= MAX_SUBSCRIPTIONS:
            raise Conflict(
                f"At most {MAX_SUBSCRIPTIONS} browsers can be subscribed; remove one first.",
                code="too_many_push_subscriptions",
            )
        try:
            with transaction.atomic():
                return PushSubscription.objects.create(endpoint=endpoint, **fields), True
        except IntegrityError:  # the same endpoint saved by a request racing this one
            PushSubscription.objects.filter(endpoint=endpoint).update(**fields)
            return PushSubscription.objects.get(endpoint=endpoint), False


def push_subscription_delete(*, subscription_id: object) -> None:
    deleted, _ = PushSubscription.objects.filter(pk=subscription_id).delete()
    if not deleted:
        raise NotFound("No such push subscription.", code="push_subscription_not_found")


def push_subscription_repr(row: PushSubscription) -> dict:
    return {
        "id": str(row.id),
        "endpoint_origin": _origin(row.endpoint),
        "user_agent": row.user_agent,
        "created_at": row.created_at.isoformat(),
        "last_success_at": row.last_success_at.isoformat() if row.last_success_at else None,
        "last_failure_at": row.last_failure_at.isoformat() if row.last_failure_at else None,
        "recent_failures": list(row.recent_failures or []),
    }


def _origin(endpoint: str) -> str:
    # The whole endpoint is a capability (anyone holding it, with the keys, can push): the listing shows
    # only whose push service it is.
    parts = urlsplit(endpoint)
    return f"{parts.scheme}://{parts.netloc}"


def push_subscriptions_listing() -> list[dict]:
    return [push_subscription_repr(row) for row in PushSubscription.objects.all()]
