"""HTTP API for check-ins (docs/api.md "Check-ins"): list and create, read, change and delete one, Run now.

Thin: bodies go to `check_ins.services.check_ins` as sent (it checks every value: 400 with a code); Run now is
`check_ins.sending.run_now`, which runs the check-in's turn to its end before answering.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from check_ins.models import CheckIn
from check_ins.sending.run_now import check_in_run_now
from check_ins.services.check_ins import access_check_in, check_in_create, check_in_delete, check_in_update
from check_ins.web import serializers as s
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput

_ERRORS = {400: ErrorSerializer, 404: ErrorSerializer}


def _body(request: Request) -> dict:
    if not isinstance(request.data, dict):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    return dict(request.data)


class CheckInListView(APIView):
    @extend_schema(operation_id="check_ins_list", responses={200: s.CheckInListSerializer})
    def get(self, request: Request) -> Response:
        return Response({"results": [s.check_in_repr(c) for c in CheckIn.objects.order_by("id")]})

    @extend_schema(request=s.CheckInWriteSerializer, responses={201: s.CheckInSerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        return Response(s.check_in_repr(check_in_create(**_body(request))), status=status.HTTP_201_CREATED)


class CheckInDetailView(APIView):
    @extend_schema(responses={200: s.CheckInSerializer, 404: ErrorSerializer})
    def get(self, request: Request, check_in_id: str) -> Response:
        return Response(s.check_in_repr(access_check_in(check_in_id)))

    @extend_schema(request=s.CheckInWriteSerializer, responses={200: s.CheckInSerializer, **_ERRORS})
    def patch(self, request: Request, check_in_id: str) -> Response:
        return Response(s.check_in_repr(check_in_update(check_in_id=check_in_id, **_body(request))))

    @extend_schema(responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, check_in_id: str) -> Response:
        check_in_delete(check_in_id=check_in_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CheckInRunView(APIView):
    @extend_schema(
        request=None,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=True)],
        responses={201: s.CheckInRunSerializer, 200: s.CheckInRunSerializer, 409: ErrorSerializer, **_ERRORS},
    )
    def post(self, request: Request, check_in_id: str) -> Response:
        """Run the check-in now; answers once its reply is stored (201), or names that reply again for a
        repeated Idempotency-Key (200)."""
        result = check_in_run_now(check_in_id=check_in_id, idempotency_key=request.headers.get("Idempotency-Key"))
        body = {"conversation_id": str(result.conversation_id), "message_id": str(result.message_id)}
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)
