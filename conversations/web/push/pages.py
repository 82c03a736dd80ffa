"""`/sw.js`: the service worker, served from the site's root so its scope is the whole app.

Static files carry a content hash in their names, and a service worker's URL must never change (the browser
checks the same URL for updates), so it is a template served here: it names the icon by its hashed URL.
No login needed (`elion.base.access.PUBLIC_PATHS`): a browser checks for updates whether or not the session
is still open, and the script holds nothing private.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string


def service_worker(request: HttpRequest) -> HttpResponse:
    response = HttpResponse(render_to_string("push/service_worker.js"), content_type="text/javascript; charset=utf-8")
    response["Service-Worker-Allowed"] = "/"
    # Checked again on every navigation: a new version reaches every browser on its next visit.
    response["Cache-Control"] = "no-cache"
    return response
