"""Owner access: one owner, a password when protection is on, loopback otherwise.

- `ELION_OWNER_PASSWORD` set: every page and API path except the health check
  and the login endpoints needs the owner's session or
  `Authorization: Bearer $ELION_API_TOKEN`.
- Unset: the app serves loopback only; every request is the owner's. A
  cross-site browser request (an `Origin` that is not this host) is refused
  so a page on another site cannot drive the local app.

The owner is a single Django superuser row (`owner`) so the Django admin and
session machinery work unchanged.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Callable, Mapping
from importlib import import_module
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY, SESSION_KEY, get_user_model, login
from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.utils.crypto import salted_hmac
from django.utils.functional import SimpleLazyObject
from rest_framework import authentication, permissions

OWNER_USERNAME = "owner"
PUBLIC_PATHS = ("/api/health/", "/login/", "/api/auth/login/", "/static/", "/sw.js")


def owner_password_marker() -> str:
    """What the owner row stores as its password: unusable (it starts with "!"), and a keyed hash of
    the current ELION_OWNER_PASSWORD, never the password itself.

    Django binds every session to a hash of this field (the session auth hash), so a new owner
    password, once stored here, ends every session opened under the old one: rotation.
    """
    return "!elion:" + salted_hmac("elion.owner-password", settings.ELION_OWNER_PASSWORD or "").hexdigest()


_marker_synced: list[str] = []  # the marker this process last stored (one check per request, a write per change)


def get_owner_user() -> AbstractBaseUser:
    """The owner's user row, created on first use, its password marker the current one."""
    user_model = get_user_model()
    marker = owner_password_marker()
    user, created = user_model.objects.get_or_create(
        username=OWNER_USERNAME, defaults={"is_staff": True, "is_superuser": True, "password": marker}
    )
    if user.password != marker:
        user.password = marker
        user.save(update_fields=["password"])
    _marker_synced[:] = [marker]
    return user


def owner_credentials_sync() -> None:
    """Store the current password marker if this process has not yet (the first request after a rotation)."""
    if _marker_synced != [owner_password_marker()]:
        get_owner_user()


def owner_login(request: HttpRequest) -> None:
    """Open the owner's session (page and API login), bound to the current password."""
    login(request, get_owner_user())


def session_is_current(session: Mapping[str, object]) -> bool:
    """Was this session opened by the owner under the password in force now?"""
    stored = session.get(HASH_SESSION_KEY)
    current = get_owner_user().get_session_auth_hash()
    return isinstance(stored, str) and hmac.compare_digest(stored, current)


def owner_session_key_valid(session_key: str) -> bool:
    """Is `session_key` the key of a live owner session opened under the current password? What Django's
    session and authentication middleware decide for a request, for one cookie value, before its body is
    read (`elion.base.request_bounds`). Reads the session row and the owner row."""
    data = import_module(settings.SESSION_ENGINE).SessionStore(session_key).load()
    if not data:
        return False
    owner_credentials_sync()
    return str(data.get(SESSION_KEY)) == str(get_owner_user().pk) and session_is_current(data)


def check_owner_password(candidate: str) -> bool:
    expected = settings.ELION_OWNER_PASSWORD
    if not expected:
        return False
    return hmac.compare_digest(candidate.encode(), expected.encode())


def bearer_token_matches(request: HttpRequest) -> bool:
    token = settings.ELION_API_TOKEN
    header = request.headers.get("Authorization", "")
    if not token or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), token.encode())


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def origin_is_cross_site(origin: str | None, host: str) -> bool:
    """True when a browser says the request comes from another site."""
    if not origin:
        return False
    if origin == "null":
        return True
    return urlsplit(origin).netloc.lower() != host.lower()


def owner_session_active(request: HttpRequest) -> bool:
    """The owner's session, opened under the current password (Django's session auth hash ends older ones)."""
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_authenticated and user.username == OWNER_USERNAME)


class OwnerAccessMiddleware:
    """Decides, before any view runs, whether the request is the owner's."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.elion_bearer = False
        if not settings.ELION_PROTECTED:
            if origin_is_cross_site(request.headers.get("Origin"), request.get_host()):
                return JsonResponse(
                    {"error": "cross_site_request", "detail": "Requests from another site are refused."},
                    status=403,
                )
            # Lazy: a send never needs the user row, so it never queries it.
            request.user = SimpleLazyObject(get_owner_user)
            return self.get_response(request)

        # Before the session's user is read: a rotated password is stored, so older sessions no longer verify.
        owner_credentials_sync()
        if bearer_token_matches(request):
            request.user = get_owner_user()
            request.elion_bearer = True
            return self.get_response(request)
        if owner_session_active(request) or request.path.startswith(PUBLIC_PATHS):
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse(
                {"error": "authentication_required", "detail": "Log in as the owner or send the API token."},
                status=401,
            )
        return redirect(f"{settings.LOGIN_URL}?next={request.get_full_path()}")


class OwnerAuthentication(authentication.BaseAuthentication):
    """DRF side of the middleware's decision; session requests keep CSRF."""

    def authenticate(self, request: HttpRequest) -> tuple[AbstractBaseUser, None] | None:
        django_request = request._request
        if getattr(django_request, "elion_bearer", False):
            return (django_request.user, "bearer")
        user = getattr(django_request, "user", None)
        if user is None or not user.is_authenticated:
            return None
        if settings.ELION_PROTECTED:
            self._enforce_csrf(request)
        return (user, "session")

    def _enforce_csrf(self, request: HttpRequest) -> None:
        # Reuse DRF's session CSRF check so session writes need the token
        # (a failure is a 403 PermissionDenied).
        authentication.SessionAuthentication().enforce_csrf(request)

    def authenticate_header(self, request: HttpRequest) -> str:
        return "Bearer"


class IsOwner(permissions.BasePermission):
    def has_permission(self, request: HttpRequest, view: object) -> bool:
        user = request.user
        return bool(user is not None and getattr(user, "is_authenticated", False) and user.username == OWNER_USERNAME)
