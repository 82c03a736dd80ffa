"""Every field of a JSON value replaced, one at a time: for the readers' "any type, never a 5xx" tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

# One of each JSON type, empty and not.
WRONG_TYPES = [None, True, 7, 2.5, "text", [], ["a"], {}, {"a": 1}]


def _paths(value: object, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def every_field_replaced(original: object, wrong: object) -> Iterator[object]:
    """Copies of `original`, each with the value at one path (every path but the root, in turn) set to `wrong`."""
    for path in list(_paths(original))[1:]:
        broken = json.loads(json.dumps(original))
        target = broken
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = wrong
        yield broken


def read_outcomes(read: Callable[[object, int], object], unreadable: type[Exception], original: object,
                  wrong: object) -> set[str]:
    """The type names `read` answers for every copy, with "problem" for an `unreadable` one; any other
    exception (TypeError, AttributeError…) propagates and fails the test."""
    outcomes = set()
    for broken in every_field_replaced(original, wrong):
        try:
            outcomes.add(type(read(broken, 0)).__name__)
        except unreadable:
            outcomes.add("problem")
    return outcomes
