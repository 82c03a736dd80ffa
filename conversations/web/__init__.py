"""The web layer of conversations: DRF API modules, server-rendered pages, the WebSocket consumer.

Thin transports: each translates a request into a service call and a result
into a response (`serializers` check shape only; `schema` documents the API;
`page_selectors` and `rendering` prepare what pages show; `export` renders
Markdown and JSON, streamed; `message_paging` reads the paged messages query).
The top layer: may import everything; nothing imports it except URL
configuration and routing.
"""
