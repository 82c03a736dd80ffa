"""ASGI entry point: HTTP and WebSocket (`elion.asgi:application`)."""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elion.settings")
django.setup(set_prefix=False)  # what `get_asgi_application` does before building Django's handler

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from elion.base.loopback_guard import LoopbackGuard  # noqa: E402
from elion.base.malloc_arenas import malloc_arenas_cap  # noqa: E402
from elion.base.startup_objects import startup_objects_freeze  # noqa: E402
from elion.web import daphne_bounds  # noqa: E402
from elion.web.body_guard import BodyGuard  # noqa: E402
from elion.web.host_guard import HostGuard  # noqa: E402
from elion.web.request_end import ConnectionReleasingASGIHandler  # noqa: E402
from elion.web.routing import websocket_urlpatterns  # noqa: E402

# Before the server starts its threads: each would otherwise keep an arena of its own (the module says why).
malloc_arenas_cap(settings.ELION_MALLOC_ARENAS)

# Django's handler, and a request's connections handed back however it ends (an error page that raises too).
django_asgi_app = ConnectionReleasingASGIHandler()

# Daphne's HTTP parser refuses those before the body arrives, and never holds a body whole.
daphne_bounds.install()

application = LoopbackGuard(
    HostGuard(
        ProtocolTypeRouter(
            {
                # Bodies over their route's limit, or without credentials, are refused unread.
                "http": BodyGuard(django_asgi_app),
                "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
            }
        )
    )
)

# Last: everything loading made stays out of the collector's full passes (the module says why).
startup_objects_freeze(settings.ELION_GC_FREEZE)
