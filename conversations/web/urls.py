"""The routes of conversations' web: each resource's API routes (served under /api/) and page routes
(served under /), gathered for `elion.web.urls`. Every resource keeps its own in `<resource>/urls.py`.

Continuity's views that act on one conversation (Branch, compaction) and its maintenance run are
routed here too, as before the grouping.
"""

from django.urls import path

from continuity.web import compaction_views
from continuity.web.api import ContinuityCleanupView, ConversationBranchView
from conversations.web.attachments import urls as attachments
from conversations.web.backup import urls as backup
from conversations.web.characters import urls as characters
from conversations.web.folders import urls as folders
from conversations.web.messages import urls as messages
from conversations.web.settings import urls as settings
from conversations.web.threads import urls as threads
from conversations.web.usage import urls as usage
from conversations.web.visibility import urls as visibility

continuity_api_urlpatterns = [
    path("maintenance/continuity-cleanup/", ContinuityCleanupView.as_view(), name="api-continuity-cleanup"),
    path("conversations/<str:conversation_id>/branch/", ConversationBranchView.as_view(), name="api-branch"),
    path(
        "conversations/<str:conversation_id>/compaction/",
        compaction_views.ConversationCompactionView.as_view(),
        name="api-compaction",
    ),
]

continuity_page_urlpatterns = [
    path("c/<str:conversation_id>/compact/", compaction_views.compact_page, name="conversation-compact"),
    path("c/<str:conversation_id>/compact/undo/", compaction_views.compaction_undo_page, name="conversation-compact-undo"),
]

api_urlpatterns = [
    *settings.api_urlpatterns,
    *usage.api_urlpatterns,
    *backup.api_urlpatterns,
    *folders.api_urlpatterns,
    *characters.api_urlpatterns,
    *threads.api_urlpatterns,
    *attachments.api_urlpatterns,
    *messages.api_urlpatterns,
    *visibility.api_urlpatterns,
    *continuity_api_urlpatterns,
]

page_urlpatterns = [
    *threads.page_urlpatterns,
    *continuity_page_urlpatterns,
    *messages.page_urlpatterns,
    *usage.page_urlpatterns,
    *settings.page_urlpatterns,
    *backup.page_urlpatterns,
    *characters.page_urlpatterns,
    *folders.page_urlpatterns,
    *visibility.page_urlpatterns,
]
