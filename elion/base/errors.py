"""Errors a service raises when a request cannot be honoured.

Every interface turns them into the same shape: HTTP 4xx with
`{"error": code, "detail": sentence}` (503 when something the request needs is
away for now), an `error` stream event, or a management-command failure. A 500
is a bug, never a service error.
"""

from __future__ import annotations


class ServiceError(Exception):
    status = 400
    code = "bad_request"

    def __init__(self, detail: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status

    def as_dict(self) -> dict[str, str]:
        return {"error": self.code, "detail": self.detail}

    def headers(self) -> dict[str, str]:
        """Headers the HTTP answer carries besides the body (none but `Unavailable`'s `Retry-After`)."""
        return {}


class InvalidInput(ServiceError):
    status = 400
    code = "invalid_input"


class NotFound(ServiceError):
    status = 404
    code = "not_found"


class Conflict(ServiceError):
    status = 409
    code = "conflict"


class Forbidden(ServiceError):
    status = 403
    code = "forbidden"


class Unavailable(ServiceError):
    """Something the request needs is away for now (the task queue's broker): 503 with `Retry-After`."""

    status = 503
    code = "unavailable"
    retry_after_seconds = 5

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after_seconds)}
