"""Routes of usage: the API (under /api/), the Settings -> Usage page and the chat page's fragment (under /)."""

from django.urls import path

from conversations.web.usage import api, pages

api_urlpatterns = [
    path("usage/", api.UsageView.as_view(), name="api-usage"),
]

page_urlpatterns = [
    path("c/<str:conversation_id>/provider-usage/", pages.provider_usage_fragment, name="provider-usage-fragment"),
    path("settings/usage/", pages.usage_page, name="settings-usage"),
]
