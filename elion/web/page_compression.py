"""Pages and their fragments go out gzip-compressed (issue 34, "Light pages").

Django's `GZipMiddleware` (with its BREACH mitigation: random bytes in the gzip header), limited to
HTML that is not streamed: a reply's server-sent events and the streamed exports pass as they are,
so nothing that flushes as it goes is held back by a compressor. Static files are WhiteNoise's
(precompressed gzip and brotli siblings); JSON API answers are left as they were.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.middleware.gzip import GZipMiddleware


class HtmlGZipMiddleware(GZipMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if response.streaming or not response.get("Content-Type", "").startswith("text/html"):
            return response
        return super().process_response(request, response)
