"""One mapping of service errors to HTTP answers for the pages.

A view calls the service and lets its error rise: `NotFound` becomes the
404 page, any other `ServiceError` a plain-text answer with its status (409,
400…). The JSON API maps the same errors in `elion.api_errors` (DRF's
exception handler, and this middleware for the non-DRF views under /api/),
the WebSocket consumer into an `error` frame. Views that show an error
inside a form catch it themselves.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin

from elion.api_errors import page_not_found
from elion.errors import NotFound, ServiceError


class ServiceErrorMiddleware(MiddlewareMixin):
    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ServiceError):
            return None
        if request.path.startswith("/api/"):
            return JsonResponse(exception.as_dict(), status=exception.status)
        if isinstance(exception, NotFound):
            return page_not_found(request, Http404(exception.detail))
        return HttpResponse(exception.detail, status=exception.status, content_type="text/plain; charset=utf-8")
