"""Today's main, for bench/send_concurrency.py's comparison: the app as `elion.asgi` serves it, except that a
streaming reply's request keeps its database connection until the stream ends (the release at the start of
the SSE stream, `elion.base.database_errors.connection_release`, made a no-op). Everything else is this code.

    daphne bench.held_connection_asgi:application
"""

from __future__ import annotations

import importlib

from elion.asgi import application  # sets Django up first

api = importlib.import_module("conversations.web.messages.api")  # only once Django is set up
api.connection_release = lambda: None

__all__ = ["application"]
