"""Routes of messages: the send, retry, watch and stop API (under /api/) and one message's fragments
for the chat page (under /). The WebSocket's route is `elion.web.routing`.
"""

from django.urls import path

from conversations.web.messages import api, pages

api_urlpatterns = [
    path("conversations/<str:conversation_id>/messages/", api.SendView.as_view(), name="api-messages"),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/retry/",
        api.RetryView.as_view(),
        name="api-retry",
    ),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/stream/",
        api.ReplyWatchView.as_view(),
        name="api-reply-stream",
    ),
    path(
        "conversations/<str:conversation_id>/messages/<str:message_id>/stop/",
        api.ReplyStopView.as_view(),
        name="api-reply-stop",
    ),
    path("conversations/<str:conversation_id>/stream/", api.LiveReplyWatchView.as_view(), name="api-live-stream"),
]

page_urlpatterns = [
    path(
        "c/<str:conversation_id>/messages/<str:message_id>/fragment/",
        pages.message_fragment,
        name="message-fragment",
    ),
    path(
        "c/<str:conversation_id>/messages/<str:message_id>/markdown/",
        pages.message_markdown,
        name="message-markdown",
    ),
]
