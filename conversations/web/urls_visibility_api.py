from django.urls import path

from conversations.web.visibility import api

urlpatterns = [
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
