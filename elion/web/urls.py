from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.utils.module_loading import import_string
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from elion.web.access import urls as access_urls


class FaviconRedirect(RedirectView):
    """/favicon.ico → the app icon's URL, asked when a browser asks: with hashed static names the URL is
    known only once `collectstatic` has written the manifest, and it changes with the icon (so: not permanent)."""

    permanent = False

    def get_redirect_url(self, *args: object, **kwargs: object) -> str:
        return static("icons/elion-32.png")


handler404 = "elion.base.api_errors.page_not_found"
handler500 = "elion.base.api_errors.server_error"

# Every app's web package routes in `urls.py`: `api_urlpatterns` under /api/, `page_urlpatterns` under its
# prefix. The apps' route lists are named by dotted path, as Django's `include("app.urls")` names a module: the
# URL root (ROOT_URLCONF) is Django's entry point above the apps, not a module the apps' code leans on.
urlpatterns = [
    path("admin/", admin.site.urls),
    # Browsers ask for /favicon.ico whatever the page links; the app icon answers.
    path("favicon.ico", FaviconRedirect.as_view()),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Before conversations: `conversations/<id>/refresh-memory/` lives in memories.
    path("api/", include(import_string("memories.web.urls.api_urlpatterns"))),
    path("api/", include(import_string("continuity.web.urls.api_urlpatterns"))),
    path("api/", include(access_urls.api_urlpatterns)),
    path("api/", include(import_string("conversations.web.urls.api_urlpatterns"))),
    path("api/", include(import_string("archive.web.urls.api_urlpatterns"))),
    path("api/", include(import_string("artifacts.web.urls.api_urlpatterns"))),
    path("api/", include(import_string("check_ins.web.urls.api_urlpatterns"))),
    path("memories/", include(import_string("memories.web.urls.page_urlpatterns"))),
    path("artifacts/", include(import_string("artifacts.web.urls.page_urlpatterns"))),
    path("", include(import_string("archive.web.urls.page_urlpatterns"))),
    path("", include(import_string("check_ins.web.urls.page_urlpatterns"))),
    path("", include(import_string("continuity.web.urls.page_urlpatterns"))),
    path("", include(access_urls.page_urlpatterns)),
    path("", include(import_string("conversations.web.urls.page_urlpatterns"))),
]
