"""Where a page's form goes back to once its action is done (or refused)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def back(request: HttpRequest, default: str) -> HttpResponse:
    """The form's `next` when it is a path on this host, else `default`."""
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}) and target.startswith("/"):
        return redirect(target)
    return redirect(default)
