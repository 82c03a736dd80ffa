"""Building JSON values from ijson's basic events, without recursion and only so deep.

ijson's own item builder recurses, and a value nested tens of thousands of
levels deep costs it gigabytes (a 40 KB file nested 20,000 levels took about
1 GB). Here a value is built with an explicit stack, and one nested deeper than
`MAX_JSON_DEPTH` levels is read to its end and never built: it comes back as
TOO_DEEP, so the caller can name it as a problem and go on.
"""

from __future__ import annotations

from collections.abc import Iterator

import ijson

from elion.base.input_checks import MAX_JSON_DEPTH

_OPEN = {"start_map", "start_array"}
_CLOSE = {"end_map", "end_array"}


class _TooDeep:
    """A value nested deeper than MAX_JSON_DEPTH: read to its end, never built."""


TOO_DEEP = _TooDeep()


def _put(container: dict | list, key: str | None, value: object) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        container.append(value)


def built_value(event: str, value: object, events: Iterator[tuple[str, object]]) -> object:
    """The JSON value that begins with `(event, value)`, built without recursion; TOO_DEEP past the limit."""
    if event not in _OPEN:
        return value
    root: dict | list = {} if event == "start_map" else []
    stack: list[dict | list] = [root]
    keys: list[str | None] = [None]
    depth, too_deep = 1, False
    for event, value in events:
        if event in _OPEN:
            depth += 1
        elif event in _CLOSE:
            depth -= 1
        if too_deep:
            if depth == 0:
                return TOO_DEEP
            continue
        if event in _OPEN:
            if depth > MAX_JSON_DEPTH:
                too_deep = True
                continue
            child: dict | list = {} if event == "start_map" else []
            _put(stack[-1], keys[-1], child)
            stack.append(child)
            keys.append(None)
        elif event in _CLOSE:
            stack.pop()
            keys.pop()
            if depth == 0:
                return root
        elif event == "map_key":
            keys[-1] = value
        else:
            _put(stack[-1], keys[-1], value)
    raise ijson.IncompleteJSONError("the JSON ends inside a value")
