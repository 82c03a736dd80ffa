"""The project's transports: URL roots, WebSocket routing, the ASGI guards (host, body, Daphne's parser bounds),
page compression, the admin site. Top layer, next to each app's `web/`.
"""
