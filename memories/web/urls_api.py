from django.urls import path

from memories.web import api

urlpatterns = [
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
