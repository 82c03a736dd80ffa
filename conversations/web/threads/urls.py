"""Routes of threads: the conversations API (under /api/) and the chat pages (under /)."""

from django.urls import path

from conversations.web.threads import api, pages

api_urlpatterns = [
    path("conversations/", api.ConversationListView.as_view(), name="api-conversations"),
    path("deletions/<str:deletion_id>/", api.DeletionReceiptView.as_view(), name="api-deletion"),
    path("conversations/<str:conversation_id>/", api.ConversationDetailView.as_view(), name="api-conversation"),
    path("conversations/<str:conversation_id>/rewind/", api.ConversationRewindView.as_view(), name="api-rewind"),
    path("conversations/<str:conversation_id>/switch/", api.ConversationSwitchView.as_view(), name="api-switch"),
    path("conversations/<str:conversation_id>/fork/", api.ConversationForkView.as_view(), name="api-fork"),
    path("conversations/<str:conversation_id>/export/", api.ConversationExportView.as_view(), name="api-export"),
]

page_urlpatterns = [
    path("", pages.home, name="home"),
    path("c/new/", pages.new_chat, name="new-chat"),
    path("c/<str:conversation_id>/handoff/drop/", pages.new_chat_handoff_drop_page, name="new-chat-handoff-drop"),
    path("c/<str:conversation_id>/", pages.chat_page, name="chat"),
    path("c/<str:conversation_id>/window/", pages.chat_window_fragment, name="chat-window"),
]
