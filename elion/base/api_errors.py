"""One error shape for the whole API: `{"error": code, "detail": sentence}`."""

from __future__ import annotations

import logging
import sys

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from elion.base.database_errors import database_outage, outage_response
from elion.base.errors import ServiceError

logger = logging.getLogger(__name__)

# The error page when the 500 template cannot render (no template, no static file, nothing that can fail).
PLAIN_SERVER_ERROR = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Server error</title></head>'
    "<body><h1>Server error</h1><p>The request failed inside the app; it has been logged.</p></body></html>"
)

_DRF_CODES = {
    exceptions.ParseError: "malformed_request",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.NotAuthenticated: "authentication_required",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.Throttled: "throttled",
    exceptions.ValidationError: "invalid_input",
}


def _flatten(detail: object) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{key}: {_flatten(value)}" for key, value in detail.items())
    if isinstance(detail, list):
        return " ".join(_flatten(item) for item in detail)
    return str(detail)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, ServiceError):
        return Response(exc.as_dict(), status=exc.status, headers=exc.headers())
    if isinstance(exc, Http404):
        return Response({"error": "not_found", "detail": "No such object."}, status=status.HTTP_404_NOT_FOUND)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    code = next((name for cls, name in _DRF_CODES.items() if isinstance(exc, cls)), "bad_request")
    detail = _flatten(getattr(exc, "detail", str(exc)))
    if isinstance(exc, exceptions.PermissionDenied) and "CSRF" in detail:
        code = "csrf_failed"
    response.data = {"error": code, "detail": detail}
    return response


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """`handler404`: a path no URL pattern matches is a JSON 404 under /api/, the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"error": "not_found", "detail": "No such API path."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """`handler500`: an error no view or middleware answered is the JSON shape under /api/, the HTML page elsewhere;
    the database or the disk failing (in a middleware, before any view) is its 503 / 507."""
    outage = database_outage(sys.exc_info()[1]) if sys.exc_info()[1] is not None else None
    if outage is not None:
        return outage_response(request, outage)
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"error": "internal_error", "detail": "The request failed inside the app; it has been logged."}, status=500
        )
    try:
        return defaults.server_error(request)
    except Exception:  # noqa: BLE001 - the error page itself failed (a template, a missing static file)
        logger.exception("the 500 page failed to render on %s %s", request.method, request.path)
        return HttpResponse(PLAIN_SERVER_ERROR, status=500)


# The error shape every API answer with a 4xx or 5xx carries, as the OpenAPI schema declares it (`Error`; no
# docstring: drf-spectacular would publish it as the component's description).
class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField()
    detail = serializers.CharField()
