"""A URL configuration whose error page itself raises (issue 41, item 13), for the connection-release tests.

`GET /boom/` reads the database and then raises; the `handler500` that should answer it raises too,
so the exception leaves Django's handler with no response, the way a missing static manifest
(`{% static %}` in 500.html) once did on every page. Served in-process through
`settings.ROOT_URLCONF`, and by a subprocess Daphne through
`DJANGO_SETTINGS_MODULE=tests.support.raising_error_page_settings`.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.urls import path

from elion.web.urls import handler404  # noqa: F401 - the app's 404 page
from elion.web.urls import urlpatterns as app_urlpatterns


class ErrorPageFailed(RuntimeError):
    pass


def boom(request: HttpRequest) -> HttpResponse:
    get_user_model().objects.exists()  # the request holds a connection (a pooled one on PostgreSQL)
    raise RuntimeError("the view fails")


def failing_error_page(request: HttpRequest) -> HttpResponse:
    raise ErrorPageFailed("the error page fails too")


handler500 = "tests.support.raising_error_page.failing_error_page"
urlpatterns = [path("boom/", boom), *app_urlpatterns]
