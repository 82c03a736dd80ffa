"""The one fetch-with-access: an id from outside (a URL, a body, a frame) to a row, or a 404.

Every `access_*` helper of the apps is this function with its own queryset
and message; an id checked without a row read (a group name, a folder, a
filter) goes through `id_or_not_found`, the same rule. An id of the wrong
shape (not an integer or UUID, a bool, an integer beyond the database's
range) is a 404 like an unknown one: no input reaches the database in a form
it would refuse with a 500.
"""

from __future__ import annotations

import re
from typing import Literal, TypeVar, overload
from uuid import UUID

from django.db.models import Model, QuerySet

from elion.base.errors import NotFound

RowT = TypeVar("RowT", bound=Model)
BIGINT_MAX = 2**63 - 1
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def parse_id(raw: object, kind: Literal["int", "uuid"]) -> int | UUID | None:
    """The id in `raw`, or None when it cannot name a row."""
    if raw is None or isinstance(raw, bool):
        return None
    if kind == "uuid":
        try:
            return UUID(str(raw))
        except ValueError:
            return None
    try:
        value = int(str(raw))
    except ValueError:
        return None
    return value if 0 < value <= BIGINT_MAX else None


def parse_sha256(raw: object) -> str | None:
    """A content hash from outside (64 lower-case hex digits), or None: nothing else reaches a query."""
    return raw if isinstance(raw, str) and _SHA256_HEX.fullmatch(raw) else None


@overload
def id_or_not_found(raw_id: object, *, kind: Literal["uuid"], missing: str, code: str) -> UUID: ...


@overload
def id_or_not_found(raw_id: object, *, kind: Literal["int"], missing: str, code: str) -> int: ...


@overload
def id_or_not_found(raw_id: object, *, kind: Literal["int", "uuid"], missing: str, code: str) -> int | UUID: ...


def id_or_not_found(raw_id: object, *, kind: Literal["int", "uuid"], missing: str, code: str) -> int | UUID:
    """The id in `raw_id`, or NotFound(`missing`, `code`): a malformed id is a 404 like an unknown one."""
    pk = parse_id(raw_id, kind)
    if pk is None:
        raise NotFound(missing, code=code)
    return pk


def access_row(
    queryset: QuerySet[RowT],
    raw_id: object,
    *,
    kind: Literal["int", "uuid"],
    missing: str,
    code: str,
    lock: bool = False,
) -> RowT:
    """The row of `queryset` with this id, or NotFound(`missing`, `code`).

    `lock` takes the row's lock; precondition: the caller is inside a transaction.
    """
    pk = id_or_not_found(raw_id, kind=kind, missing=missing, code=code)
    row = (queryset.select_for_update() if lock else queryset).filter(pk=pk).first()
    if row is None:
        raise NotFound(missing, code=code)
    return row
