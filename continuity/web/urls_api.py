from django.urls import path

from continuity.web.api import ContinuityCleanupView, ConversationBranchView
from continuity.web.compaction_views import ConversationCompactionView

urlpatterns = [
    path("maintenance/continuity-cleanup/", ContinuityCleanupView.as_view(), name="api-continuity-cleanup"),
    path("conversations/<str:conversation_id>/branch/", ConversationBranchView.as_view(), name="api-branch"),
    path(
        "conversations/<str:conversation_id>/compaction/", ConversationCompactionView.as_view(), name="api-compaction"
    ),
]
