from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from conversations.web import urls as conversations_urls
from elion.web.access import urls as access_urls


class FaviconRedirect(RedirectView):
    """/favicon.ico → the app icon's URL, asked when a browser asks: with hashed static names the URL is
    known only once `collectstatic` has written the manifest, and it changes with the icon (so: not permanent)."""

    permanent = False

    def get_redirect_url(self, *args: object, **kwargs: object) -> str:
        return static("icons/elion-32.png")


handler404 = "elion.base.api_errors.page_not_found"
handler500 = "elion.base.api_errors.server_error"

urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico whatever the page links; the app icon answers.
    path("favicon.ico", FaviconRedirect.as_view()),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Before conversations: `conversations/<id>/refresh-memory/` lives in memories.
    path("api/", include("memories.web.urls_api")),
    path("api/", include("continuity.web.urls_api")),
    path("api/", include(access_urls.api_urlpatterns)),
    path("api/", include(conversations_urls.api_urlpatterns)),
    path("api/", include("archive.web.urls_api")),
    path("api/", include("artifacts.web.urls_api")),
    path("api/", include("check_ins.web.urls_api")),
    path("api/", include("check_ins.web.proposal_urls")),
    path("memories/", include("memories.web.urls_pages")),
    path("artifacts/", include("artifacts.web.urls_pages")),
    path("", include("archive.web.urls_pages")),
    path("", include("check_ins.web.page_urls")),
    path("", include("continuity.web.urls_pages")),
    path("", include(access_urls.page_urlpatterns)),
    path("", include(conversations_urls.page_urlpatterns)),
]
