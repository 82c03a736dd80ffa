"""HTTP API for owner access: logging in, and the health check (both answered without a login)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.services.health import reconciliation_status
from elion.base import access
from elion.base.api_errors import ErrorSerializer
from elion.base.login_throttle import login_device_remember, login_failed, login_retry_after, login_succeeded
from elion.web.access.backup_health import backup_health


class LoginSerializer(serializers.Serializer):
    password = serializers.CharField()


class BackupHealthSerializer(serializers.Serializer):
    last_verified_at = serializers.DateTimeField(allow_null=True)
    stale = serializers.BooleanField()


class HealthSerializer(serializers.Serializer):
    status = serializers.CharField()
    reconciliation = serializers.DictField()
    backup = BackupHealthSerializer()


class HealthView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(responses=HealthSerializer)
    def get(self, request: Request) -> Response:
        return Response({"status": "ok", "reconciliation": reconciliation_status(), "backup": backup_health()})


class LoginView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(request=LoginSerializer, responses={200: HealthSerializer, 401: ErrorSerializer})
    def post(self, request: Request) -> Response:
        retry_after = login_retry_after(request._request)
        if retry_after is not None:
            return Response(
                {"error": "too_many_attempts", "detail": f"Too many wrong passwords; try again in {retry_after} s."},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(retry_after)},
            )
        password = request.data.get("password") if isinstance(request.data, dict) else None
        if not isinstance(password, str) or not access.check_owner_password(password):
            login_failed(request._request)
            return Response(
                {"error": "invalid_credentials", "detail": "That password is not the owner's."},
                status=status.HTTP_401_UNAUTHORIZED,
            )
        login_succeeded(request._request)
        access.owner_login(request._request)
        return login_device_remember(request._request, Response({"status": "ok"}))
