"""Routes of the settings: the API (under /api/) and the Settings page (under /)."""

from django.urls import path

from conversations.web.settings import api, pages

api_urlpatterns = [
    path("settings/", api.SettingsView.as_view(), name="api-settings"),
]

page_urlpatterns = [
    path("settings/", pages.settings_page, name="settings"),
]
