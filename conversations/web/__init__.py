"""The web layer of conversations, grouped by resource: DRF API views, server-rendered pages, the WebSocket.

Each resource is a sub-package holding side by side its `api.py` (DRF views, under /api/), its
`pages.py` (server-rendered pages, under /) and its `urls.py` (`api_urlpatterns`, `page_urlpatterns`):
`threads/` (conversations and the chat page; `export` renders Markdown and JSON, streamed),
`messages/` (send, retry, watch, stop, the message list, one message's fragments; `consumers` is
the WebSocket), `attachments/`, `folders/`, `visibility/` (trash, restore, keep, shields, Past
Conversation Search), `settings/`, `characters/`, `usage/`, `backup/` (download, restore).
`urls` gathers the resources' routes for `elion.web.urls`.

Shared by the resources (they import it; it imports none of them): `serializers` (representations
and input checks, shape only; a conversation's is `continuity.web.conversation_shape`), `schema` (the OpenAPI description), `page_selectors` and `rendering`
(what pages show), `message_paging` (the paged messages query), `redirects` (where a form goes back to).

Thin transports: each translates a request into a service call and a result into a response. The
top layer: may import everything; nothing imports it except URL configuration and routing.
"""
