"""The project package: settings from the environment, owner access, URLs, ASGI and WebSocket routing.

Its utilities (`env`, `errors`, `rows`, `fulltext`, `api_errors`,
`service_errors`, `access`, `db`) are the bottom layer, imported by every app;
`urls`, `asgi`, `routing`, `admin_site` and `context_processors` are the top.
"""
