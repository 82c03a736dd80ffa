"""HTTP API for check-in proposals (issue 44, item 3; docs/pending/issue-44-pages.md):

* `GET /api/check-in-proposals/` — pending and dismissed, newest first (`?status=` for one status);
* `POST /api/check-in-proposals/{id}/approve/` — optional edits (`title`, `brief`, `schedule`, `target`,
  `time_zone`, `quiet_hours`, in the check-ins API's shapes) → 201 `{"check_in", "proposal"}`;
* `POST /api/check-in-proposals/{id}/dismiss/` → 200 the proposal.

Thin: `check_ins.services.proposals` holds the rules.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from check_ins.models import CheckInProposal, ProposalStatus
from check_ins.services import proposals
from check_ins.web.serializers import (
    CheckInSerializer,
    QuietHoursSerializer,
    ScheduleSerializer,
    TargetSerializer,
    check_in_repr,
)
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput


def _id(value: object) -> str | None:
    return str(value) if value is not None else None


def proposal_repr(proposal: CheckInProposal) -> dict:
    conversation = proposal.conversation
    return {
        "id": proposal.id,
        "title": proposal.title,
        "brief": proposal.brief,
        "schedule": proposal.schedule,
        "target": proposals.proposal_target(proposal),
        "reason": proposal.reason,
        "status": proposal.status,
        "conversation_id": _id(proposal.conversation_id),
        "conversation_title": conversation.display_title if conversation is not None else None,
        "message_id": _id(proposal.source_message_id),
        "reply_id": _id(proposal.reply_message_id),
        "check_in_id": proposal.check_in_id,
        "created_at": proposal.created_at.isoformat(),
        "decided_at": proposal.decided_at.isoformat() if proposal.decided_at else None,
    }


class CheckInProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    brief = serializers.CharField()
    schedule = ScheduleSerializer()
    target = TargetSerializer()
    reason = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=ProposalStatus.values)
    conversation_id = serializers.UUIDField(allow_null=True, help_text="The chat Elion proposed it in.")
    conversation_title = serializers.CharField(allow_null=True)
    message_id = serializers.UUIDField(allow_null=True, help_text="The owner's turn the proposing reply answered.")
    reply_id = serializers.UUIDField(allow_null=True, help_text="The reply whose tool call proposed it.")
    check_in_id = serializers.IntegerField(allow_null=True, help_text="Once approved: the check-in it became.")
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)


class CheckInProposalListSerializer(serializers.Serializer):
    results = CheckInProposalSerializer(many=True)


class CheckInProposalApproveSerializer(serializers.Serializer):
    """Optional edits; what is left out is taken from the proposal (the zone from Settings)."""

    title = serializers.CharField(required=False)
    brief = serializers.CharField(required=False)
    schedule = ScheduleSerializer(required=False)
    target = TargetSerializer(required=False)
    time_zone = serializers.CharField(required=False)
    quiet_hours = QuietHoursSerializer(required=False, allow_null=True)


class CheckInProposalApprovedSerializer(serializers.Serializer):
    check_in = CheckInSerializer()
    proposal = CheckInProposalSerializer()


def _edits(request: Request) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    return dict(data.items())


class CheckInProposalListView(APIView):
    @extend_schema(
        operation_id="check_in_proposals_list",
        parameters=[OpenApiParameter("status", str, enum=ProposalStatus.values, required=False)],
        responses={200: CheckInProposalListSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        rows = proposals.check_in_proposals_list(request.query_params.get("status"))
        return Response({"results": [proposal_repr(p) for p in rows]})


class CheckInProposalApproveView(APIView):
    @extend_schema(
        request=CheckInProposalApproveSerializer,
        responses={201: CheckInProposalApprovedSerializer, 400: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer},
    )
    def post(self, request: Request, proposal_id: str) -> Response:
        check_in = proposals.check_in_proposal_approve(proposal_id=proposal_id, changes=_edits(request))
        proposal = proposals.access_check_in_proposal(proposal_id)
        return Response({"check_in": check_in_repr(check_in), "proposal": proposal_repr(proposal)},
                        status=status.HTTP_201_CREATED)


class CheckInProposalDismissView(APIView):
    @extend_schema(
        request=None,
        responses={200: CheckInProposalSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, proposal_id: str) -> Response:
        return Response(proposal_repr(proposals.check_in_proposal_dismiss(proposal_id=proposal_id)))
