"""IANA time zone names from outside (Settings' `time_zone`, a check-in's), checked against the zone
database this machine has (the system's, or the `tzdata` package where the system has none)."""

from __future__ import annotations

import zoneinfo
from functools import cache

from elion.base.errors import InvalidInput


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def time_zone_clean(value: object) -> str:
    """An IANA zone name this machine knows ("Europe/Berlin", "UTC"), else 400 `invalid_time_zone`.
    Only listed names pass, so no path or other key ever reaches `ZoneInfo`."""
    if not isinstance(value, str) or value not in _zone_names():
        raise InvalidInput("time_zone must be an IANA time zone name, such as Europe/Berlin or UTC.",
                           code="invalid_time_zone")
    return value


def time_zone_names() -> list[str]:
    """Every zone name `time_zone_clean` accepts, sorted: the pages' suggestions (a datalist)."""
    return sorted(_zone_names())
