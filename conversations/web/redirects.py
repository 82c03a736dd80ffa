"""Where a page's form goes back to once its action is done (or refused)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from elion.base.local_redirect import redirect_local


def back(request: HttpRequest, default: str) -> HttpResponse:
    """The form's `next` when it is a path on this host, else `default`."""
    return redirect_local(request.POST.get("next"), default)
