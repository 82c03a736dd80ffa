"""Routes of memories: the API (served under /api/) and the Memories pages (served under /memories/)."""

from django.urls import path

from memories.web import api, pages, review

api_urlpatterns = [
    path("memories/", api.MemoryListView.as_view(), name="api-memories"),
    path("memories/import/", api.MemoryImportView.as_view(), name="api-memories-import"),
    path("memories/import/preview/", api.MemoryImportPreviewView.as_view(), name="api-memories-import-preview"),
    path("memories/reorder/", api.MemoryReorderView.as_view(), name="api-memories-reorder"),
    path("memories/<str:memory_id>/", api.MemoryDetailView.as_view(), name="api-memory"),
    path("memories/<str:memory_id>/impact/", api.MemoryImpactView.as_view(), name="api-memory-impact"),
    path("memory-proposals/", api.MemoryProposalListView.as_view(), name="api-memory-proposals"),
    path(
        "memory-proposals/clear-dismissed/",
        api.MemoryProposalClearDismissedView.as_view(),
        name="api-memory-proposals-clear-dismissed",
    ),
    path(
        "memory-proposals/<str:proposal_id>/approve/",
        api.MemoryProposalApproveView.as_view(),
        name="api-memory-proposal-approve",
    ),
    path(
        "memory-proposals/<str:proposal_id>/dismiss/",
        api.MemoryProposalDismissView.as_view(),
        name="api-memory-proposal-dismiss",
    ),
    path(
        "conversations/<str:conversation_id>/memories/",
        api.ConversationMemoriesView.as_view(),
        name="api-conversation-memories",
    ),
    path(
        "conversations/<str:conversation_id>/refresh-memory/",
        api.ConversationRefreshMemoryView.as_view(),
        name="api-refresh-memory",
    ),
]

page_urlpatterns = [
    path("", pages.memories_page, name="memories"),
    path("import/", pages.import_page, name="memories-import"),
    path("suggestions/", review.suggestions_page, name="memory-suggestions"),
    path("suggestions/clear-dismissed/", review.clear_dismissed, name="memory-suggestions-clear"),
    path("suggestions/<int:proposal_id>/<str:action>/", review.proposal_action, name="memory-proposal-action"),
    path("in/<str:conversation_id>/", review.chat_memories_page, name="chat-memories"),
    path("<int:memory_id>/", review.memory_page, name="memory"),
    path("<int:memory_id>/edit/", pages.edit_page, name="memory-edit"),
    path("<int:memory_id>/delete/", pages.delete_page, name="memory-delete"),
    path("<int:memory_id>/move/", pages.move_memory, name="memory-move"),
    path("refresh/<str:conversation_id>/", pages.refresh_memory, name="memory-refresh"),
]
