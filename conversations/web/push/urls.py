"""Routes of Web Push: the key and subscriptions (under /api/) and the service worker (under /)."""

from django.urls import path

from conversations.web.push import api, pages

api_urlpatterns = [
    path("push/key/", api.PushKeyView.as_view(), name="api-push-key"),
    path("push/subscriptions/", api.PushSubscriptionsView.as_view(), name="api-push-subscriptions"),
    path("push/subscriptions/<uuid:subscription_id>/", api.PushSubscriptionView.as_view(),
         name="api-push-subscription"),
]

page_urlpatterns = [
    path("sw.js", pages.service_worker, name="service-worker"),
]
