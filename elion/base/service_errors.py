"""One mapping of service errors to HTTP answers for the pages.

A view calls the service and lets its error rise: `NotFound` becomes the
404 page, any other `ServiceError` a plain-text answer with its status (409,
400…). The JSON API maps the same errors in `elion.base.api_errors` (DRF's
exception handler, and this middleware for the non-DRF views under /api/),
the WebSocket consumer into an `error` frame. Views that show an error
inside a form catch it themselves.
"""

from __future__ import annotations

import logging

from django.core.exceptions import BadRequest, PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.deprecation import MiddlewareMixin

from elion.base.api_errors import page_not_found
from elion.base.database_errors import database_outage, outage_response
from elion.base.errors import NotFound, ServiceError

logger = logging.getLogger(__name__)


REQUEST_TOO_LARGE = {
    "error": "request_too_large",
    "detail": "The request body is larger than the app accepts (send large files as uploads).",
}
INTERNAL_ERROR = {"error": "internal_error", "detail": "The request failed inside the app; it has been logged."}


class ServiceErrorMiddleware(MiddlewareMixin):
    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        outage = database_outage(exception)
        if outage is not None:
            # The database or the disk failed: 503 / 507, on the pages too.
            return outage_response(request, outage)
        if not isinstance(exception, ServiceError):
            if request.path.startswith("/api/") and isinstance(exception, RequestDataTooBig):
                return JsonResponse(REQUEST_TOO_LARGE, status=413)
            if request.path.startswith("/api/") and isinstance(exception, SuspiciousOperation | BadRequest):
                # Django's own refusals of a malformed request (it would answer them 400, as HTML).
                return JsonResponse({"error": "bad_request", "detail": "The request was malformed."}, status=400)
            if request.path.startswith("/api/") and not isinstance(exception, Http404 | PermissionDenied):
                # A bug, not bad input: the API still answers its JSON shape, and it is logged once.
                logger.error("unexpected error on %s %s", request.method, request.path, exc_info=exception)
                return JsonResponse(INTERNAL_ERROR, status=500)
            return None
        if request.path.startswith("/api/"):
            return JsonResponse(exception.as_dict(), status=exception.status, headers=exception.headers())
        if isinstance(exception, NotFound):
            return page_not_found(request, Http404(exception.detail))
        return HttpResponse(exception.detail, status=exception.status, content_type="text/plain; charset=utf-8",
                            headers=exception.headers())
