"""Routes of visibility and Past Conversation Search: the API (under /api/) and the pages (under /)."""

from django.urls import path

from conversations.web.visibility import api, pages

api_urlpatterns = [
    path("search/", api.PastConversationSearchView.as_view(), name="api-search"),
    path("conversations/<str:conversation_id>/trash/", api.ConversationTrashView.as_view(), name="api-trash"),
    path("conversations/<str:conversation_id>/restore/", api.ConversationRestoreView.as_view(), name="api-restore"),
    path("conversations/<str:conversation_id>/keep/", api.ConversationKeepView.as_view(), name="api-keep"),
    path(
        "conversations/<str:conversation_id>/release-shield/",
        api.ConversationReleaseShieldView.as_view(),
        name="api-release-shield",
    ),
]

page_urlpatterns = [
    path("search/", pages.search_page, name="search"),
    path("trash/", pages.trash_page, name="trash"),
    path("c/<str:conversation_id>/trash/", pages.conversation_trash_page, name="conversation-trash"),
    path("c/<str:conversation_id>/restore/", pages.conversation_restore_page, name="conversation-restore"),
    path(
        "c/<str:conversation_id>/delete-forever/",
        pages.conversation_delete_forever_page,
        name="conversation-delete-forever",
    ),
    path(
        "c/<str:conversation_id>/release-shield/",
        pages.conversation_release_shield_page,
        name="conversation-release-shield",
    ),
    path("c/<str:conversation_id>/keep/", pages.conversation_keep_page, name="conversation-keep"),
    path("c/<str:conversation_id>/move/", pages.conversation_move_page, name="conversation-move"),
]
