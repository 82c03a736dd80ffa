"""Where a form or the login page sends the browser next: a path on this site, or the page's own default.

Every `next` parameter in the project goes through `redirect_local`. A value is taken only when it is
a local path (`/…`, no scheme, no host, `//host` and `/\\host` refused by Django's
`url_has_allowed_host_and_scheme` with no host allowed) and holds no control character; anything else
(`-1`, `logout`, `https://evil.example`, `javascript:…`) falls back to `default`. The value is never
resolved as a URL name (`django.shortcuts.redirect("logout")` would), so no value can raise.
"""

from __future__ import annotations

from django.http import HttpResponseRedirect
from django.utils.http import url_has_allowed_host_and_scheme


def local_path(target: object) -> str | None:
    """`target` when it is a path on this site, else None."""
    if not isinstance(target, str) or not target.startswith("/"):
        return None
    if any(ord(character) < 32 or ord(character) == 127 for character in target):
        return None
    if not url_has_allowed_host_and_scheme(target, allowed_hosts=set()):
        return None
    return target


def redirect_local(target: object, default: str) -> HttpResponseRedirect:
    """A redirect to `target` when it is a local path, else to `default` (a path the caller wrote)."""
    return HttpResponseRedirect(local_path(target) or default)
