"""Django's ASGI handler with one addition: every database connection a request used goes back however it ends.

Django hands a request's connections back when its response closes (`request_finished` →
`close_old_connections`). A request whose error page itself fails never gets a response: the
exception leaves `ASGIHandler.handle`, no `request_finished` is sent, and on PostgreSQL the pooled
connection stays checked out for good. Twenty such requests emptied the pool; every request after,
`/api/health/` included, waited out the pool timeout and answered 503 (issue 41, item 13).

`handle` here runs Django's and then, in a `finally`, the same `close_old_connections` in the
request's own thread (`sync_to_async` is thread-sensitive inside the request's
`ThreadSensitiveContext`, where the view's sync code ran). After a normal response it finds nothing
left to close.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.db import close_old_connections


class ConnectionReleasingASGIHandler(ASGIHandler):
    async def handle(self, scope: dict, receive: object, send: object) -> None:
        try:
            await super().handle(scope, receive, send)
        finally:
            await sync_to_async(close_old_connections)()
