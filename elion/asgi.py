"""ASGI entry point: HTTP and WebSocket (`elion.asgi:application`)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elion.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from elion.base.loopback_guard import LoopbackGuard  # noqa: E402
from elion.web import daphne_bounds  # noqa: E402
from elion.web.body_guard import BodyGuard  # noqa: E402
from elion.web.host_guard import HostGuard  # noqa: E402
from elion.web.routing import websocket_urlpatterns  # noqa: E402

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
