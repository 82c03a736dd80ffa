"""`GET /api/push/key/`, `GET|POST /api/push/subscriptions/`, `DELETE /api/push/subscriptions/{id}/` (docs/push.md).

Thin: what a subscription may hold and how it is stored live in `operations.push.subscriptions`.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.web.serializers import validated
from elion.base.api_errors import ErrorSerializer
from operations.push.keys import application_server_key
from operations.push.subscriptions import (
    push_subscription_delete,
    push_subscription_repr,
    push_subscription_save,
    push_subscriptions_listing,
)


class PushKeySerializer(serializers.Serializer):
    public_key = serializers.CharField(help_text="The VAPID application server key, URL-safe base64 (no padding).")


class PushKeysInSerializer(serializers.Serializer):
    p256dh = serializers.CharField(max_length=200, trim_whitespace=False)
    auth = serializers.CharField(max_length=200, trim_whitespace=False)


class PushSubscriptionInSerializer(serializers.Serializer):
    """The browser's `PushSubscription.toJSON()`, as it is; `user_agent` an optional label for the listing."""

    endpoint = serializers.CharField(max_length=2000, trim_whitespace=False)
    expirationTime = serializers.FloatField(required=False, allow_null=True)  # noqa: N815 - the browser's name
    keys = PushKeysInSerializer()
    user_agent = serializers.CharField(required=False, allow_blank=True, max_length=200)


class PushFailureSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    status = serializers.IntegerField(allow_null=True, help_text="The push service's HTTP status; null: no answer.")
    message = serializers.CharField()


class PushSubscriptionSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    endpoint_origin = serializers.CharField(help_text="Scheme and host of the push service (the endpoint itself "
                                                      "is a capability and is never shown).")
    user_agent = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    last_success_at = serializers.DateTimeField(allow_null=True)
    last_failure_at = serializers.DateTimeField(allow_null=True)
    recent_failures = PushFailureSerializer(many=True)


class PushSubscriptionListSerializer(serializers.Serializer):
    results = PushSubscriptionSerializer(many=True)


class PushKeyView(APIView):
    @extend_schema(operation_id="push_key_retrieve", responses=PushKeySerializer)
    def get(self, request: Request) -> Response:
        return Response({"public_key": application_server_key()})


class PushSubscriptionsView(APIView):
    @extend_schema(operation_id="push_subscriptions_list", responses=PushSubscriptionListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"results": push_subscriptions_listing()})

    @extend_schema(
        operation_id="push_subscriptions_create",
        request=PushSubscriptionInSerializer,
        responses={201: PushSubscriptionSerializer, 200: PushSubscriptionSerializer,
                   400: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        data = validated(PushSubscriptionInSerializer, request.data)
        label = data.get("user_agent") or request.headers.get("User-Agent", "")
        row, created = push_subscription_save(endpoint=data["endpoint"], keys=dict(data["keys"]), user_agent=label)
        return Response(push_subscription_repr(row), status=201 if created else 200)


class PushSubscriptionView(APIView):
    @extend_schema(operation_id="push_subscriptions_destroy", responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, subscription_id: str) -> Response:
        push_subscription_delete(subscription_id=subscription_id)
        return Response(status=204)
