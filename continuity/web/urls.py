"""Routes of continuity's own views (Branch, compaction, Cleanup): the API (served under /api/) and the
compaction pages (served under /)."""

from django.urls import path

from continuity.web import compaction_views
from continuity.web.api import ContinuityCleanupView, ConversationBranchView
from continuity.web.compaction_views import ConversationCompactionView

api_urlpatterns = [
    path("maintenance/continuity-cleanup/", ContinuityCleanupView.as_view(), name="api-continuity-cleanup"),
    path("conversations/<str:conversation_id>/branch/", ConversationBranchView.as_view(), name="api-branch"),
    path(
        "conversations/<str:conversation_id>/compaction/", ConversationCompactionView.as_view(), name="api-compaction"
    ),
]

page_urlpatterns = [
    path("c/<str:conversation_id>/compact/", compaction_views.compact_page, name="conversation-compact"),
    path("c/<str:conversation_id>/compact/undo/", compaction_views.compaction_undo_page, name="conversation-compact-undo"),
]
