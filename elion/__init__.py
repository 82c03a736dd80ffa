"""The project package: settings from the environment, owner access, URLs, ASGI and WebSocket routing.

Its utilities (`env`, `errors`, `rows`, `fulltext`, `api_errors`,
`service_errors`, `access`, `db`) are the bottom layer, imported by every app;
`urls`, `asgi`, `routing` and `admin_site` are the top (the pages' template context is `conversations.web.context_processors`).
"""
