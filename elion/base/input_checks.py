"""Input no layer below may see: NUL bytes, unpaired surrogates, JSON nested deeper than anyone writes.

A NUL in a text column is refused by PostgreSQL (a 500 there, stored on
SQLite), an unpaired surrogate cannot be encoded for either database, and
`json.loads` recurses once per nesting level. Every JSON body (the DRF
parsers, the send view, WebSocket frames), form field and query parameter
passes through here first: bad input is a 400 naming the field, and nothing
is written.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable

from django.core.exceptions import BadRequest, RequestDataTooBig, SuspiciousOperation
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.http.multipartparser import MultiPartParserError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from elion.base.errors import InvalidInput, ServiceError

logger = logging.getLogger(__name__)

MAX_JSON_DEPTH = 64
_BAD_CHARACTERS = re.compile("[\x00\ud800-\udfff]")
# JSON strings as whole tokens (so brackets inside them do not count), then brackets.
_JSON_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|[\[\]{}]')


def json_too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Does `text` open more than `limit` arrays/objects inside each other? (No recursion, one pass.)"""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth > limit:
                return True
        elif mark in "]}":
            depth -= 1
    return False


def invalid_characters(field: str) -> InvalidInput:
    return InvalidInput(
        f"{field} holds a NUL character or an unpaired surrogate, which no text may contain.",
        code="invalid_characters",
    )


def text_check(value: object, field: str = "the body") -> None:
    """Raise `invalid_characters` for the first string (key or value) in `value` holding a NUL or lone surrogate.

    Walks nested lists and objects without recursion; `field` names the
    top-level field in the message (`content`, `memories[2].text`…).
    """
    pending: list[tuple[object, str]] = [(value, field)]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            if _BAD_CHARACTERS.search(item):
                raise invalid_characters(path)
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _BAD_CHARACTERS.search(key):
                    raise invalid_characters(f"a field name in {path}")
                pending.append((child, key if path == "the body" else f"{path}.{key}"))
        elif isinstance(item, list | tuple):
            pending.extend((child, f"{path}[{index}]") for index, child in enumerate(item))


def json_load_checked(raw: bytes | str) -> object:
    """Parse a JSON document after the depth check, then check its text."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise InvalidInput("The body is not UTF-8 JSON.", code="malformed_request") from exc
    if json_too_deep(text):
        raise InvalidInput(
            f"The JSON is nested deeper than {MAX_JSON_DEPTH} levels.", code="json_too_deep"
        )
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidInput("The body is not valid JSON.", code="malformed_request") from exc
    text_check(value)
    return value


def query_dict_check(data: QueryDict | Iterable[tuple[str, str]]) -> None:
    """Every key and value of a query string or form (uploaded files' names included)."""
    items = data.lists() if isinstance(data, QueryDict) else ((key, [value]) for key, value in data)
    for key, values in items:
        if _BAD_CHARACTERS.search(key):
            raise invalid_characters("a field name")
        for value in values:
            if isinstance(value, str) and _BAD_CHARACTERS.search(value):
                raise invalid_characters(key)


class CheckedJSONParser(JSONParser):
    """DRF's JSON parser, with the depth and character checks first."""

    def parse(self, stream: object, media_type: str | None = None, parser_context: dict | None = None) -> object:
        return json_load_checked(stream.read() if stream is not None else b"")


class CheckedFormParser(FormParser):
    def parse(self, stream: object, media_type: str | None = None, parser_context: dict | None = None) -> QueryDict:
        data = super().parse(stream, media_type, parser_context)
        query_dict_check(data)
        return data


class CheckedMultiPartParser(MultiPartParser):
    def parse(self, stream: object, media_type: str | None = None, parser_context: dict | None = None) -> object:
        parsed = super().parse(stream, media_type, parser_context)
        query_dict_check(parsed.data)
        for name, upload in parsed.files.items():
            if upload.name and _BAD_CHARACTERS.search(upload.name):
                raise invalid_characters(f"the name of the file in {name}")
        return parsed


class InputCheckMiddleware:
    """Paths and query strings everywhere, and the pages' form posts, through the same character check.

    A NUL or unpaired surrogate in the path is a 404 (no route names one; it never reaches a query).
    A page form Django cannot parse (a multipart body without a boundary, too large, too many fields)
    is that client's error: its 4xx, and one log line, not a traceback.
    (JSON bodies and the API's forms are checked by the DRF parsers above and
    the send view; uploads' bytes are checked by their readers.)
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            if _BAD_CHARACTERS.search(request.path):
                return _answer(request, ServiceError("No such path.", code="not_found", status=404))
            query_dict_check(request.GET)
            if (
                request.method == "POST"
                and not request.path.startswith("/api/")
                and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data")
            ):
                query_dict_check(request.POST)
        except InvalidInput as exc:
            return _answer(request, exc)
        except (MultiPartParserError, SuspiciousOperation, BadRequest) as exc:
            return _answer(request, client_error(request, exc))
        return self.get_response(request)


def client_error(request: HttpRequest, exc: Exception) -> ServiceError:
    """A body Django refused to parse, as the client's error (logged as one line)."""
    logger.warning("refused %s %s: %s: %s", request.method, request.path, type(exc).__name__, exc)
    if isinstance(exc, RequestDataTooBig):
        return ServiceError("The request body is larger than the app accepts.", code="request_too_large", status=413)
    return ServiceError("The request body could not be parsed.", code="malformed_request", status=400)


def _answer(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse(exc.as_dict(), status=exc.status)
    return HttpResponse(exc.detail, status=exc.status, content_type="text/plain; charset=utf-8")
