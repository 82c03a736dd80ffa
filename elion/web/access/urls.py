"""Routes of owner access: the health check and the login API (under /api/), the login and logout pages (under /)."""

from django.urls import path

from elion.web.access import api, pages

api_urlpatterns = [
    path("health/", api.HealthView.as_view(), name="api-health"),
    path("auth/login/", api.LoginView.as_view(), name="api-login"),
]

page_urlpatterns = [
    path("login/", pages.login_page, name="login"),
    path("logout/", pages.logout_page, name="logout"),
]
