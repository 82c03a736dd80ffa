"""Content-Security-Policy on every HTML page: only the app's own scripts, styles and connections.

No page holds an inline script, style element or style attribute (they live
under `static/`), so `'self'` is the whole allow-list; images may also be
`data:` and `blob:` URLs (attachment previews). `frame-ancestors 'none'`
keeps the pages out of other sites' frames; `object-src 'none'` and
`base-uri 'self'` close the classic injection doors. The browser tests fail
on any violation the pages report.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            response.setdefault("Content-Security-Policy", POLICY)
        return response
