"""The routes of conversations' web: each resource's API routes (served under /api/) and page routes
(served under /), gathered for `elion.web.urls`. Every resource keeps its own in `<resource>/urls.py`.

Continuity's views (Branch, compaction, Cleanup) route themselves: `continuity.web.urls`.
"""

from conversations.web.attachments import urls as attachments
from conversations.web.backup import urls as backup
from conversations.web.characters import urls as characters
from conversations.web.folders import urls as folders
from conversations.web.messages import urls as messages
from conversations.web.push import urls as push
from conversations.web.settings import urls as settings
from conversations.web.threads import urls as threads
from conversations.web.usage import urls as usage
from conversations.web.visibility import urls as visibility
from conversations.web.voice import urls as voice

api_urlpatterns = [
    *settings.api_urlpatterns,
    *usage.api_urlpatterns,
    *backup.api_urlpatterns,
    *push.api_urlpatterns,
    *folders.api_urlpatterns,
    *characters.api_urlpatterns,
    *threads.api_urlpatterns,
    *attachments.api_urlpatterns,
    *messages.api_urlpatterns,
    *visibility.api_urlpatterns,
    *voice.api_urlpatterns,
]

page_urlpatterns = [
    *threads.page_urlpatterns,
    *messages.page_urlpatterns,
    *usage.page_urlpatterns,
    *settings.page_urlpatterns,
    *backup.page_urlpatterns,
    *push.page_urlpatterns,
    *characters.page_urlpatterns,
    *folders.page_urlpatterns,
    *visibility.page_urlpatterns,
    *voice.page_urlpatterns,
]
