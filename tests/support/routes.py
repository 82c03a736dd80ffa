"""Every route of the app, with a sample value for each path converter."""

from __future__ import annotations

import re
import uuid

from django.urls import URLPattern, URLResolver, get_resolver, resolve

SAMPLE_ID = str(uuid.uuid4())


CONVERTER_SAMPLES = {"int": "1", "str": SAMPLE_ID, "path": "1", "slug": "x", "uuid": SAMPLE_ID}


def _route_patterns(patterns, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _route_patterns(pattern.url_patterns, _join(prefix, str(pattern.pattern)))
        elif isinstance(pattern, URLPattern):
            yield _join(prefix, str(pattern.pattern))


def _join(prefix: str, pattern: str) -> str:
    """Join like `ResolverMatch.route` does (a regex's leading `^` is dropped after a prefix)."""
    return prefix + pattern.removeprefix("^") if prefix else pattern


def _sample_group(match: re.Match) -> str:
    alternatives = match.group(2).split("|")
    return alternatives[0] if all(a.isidentifier() for a in alternatives) else "x"


def sample_path(route: str) -> str:
    """A concrete URL that resolves to `route` (path converters and named regex groups filled in)."""
    path = re.sub(r"\(\?P<(\w+)>([^)]*)\)", _sample_group, route)
    path = re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: CONVERTER_SAMPLES[m.group(1) or "str"], path)
    return "/" + path.replace("^", "").replace("$", "")


def all_routes() -> list[tuple[str, str]]:
    """(route, sample path) for every route; a route the sampler cannot reach fails the suite."""
    routes = []
    for route in _route_patterns(get_resolver().url_patterns):
        path = sample_path(route)
        assert resolve(path).route == route, f"no sample URL reaches {route!r} (got {path!r}): extend sample_path"
        routes.append((route, path))
    return routes


ROUTES = all_routes()
