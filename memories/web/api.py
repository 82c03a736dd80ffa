"""HTTP API for memories and explicit Refresh memory (docs/api.md "Memories").

Views translate requests into service calls and results into responses.
"""

from __future__ import annotations

from django.http import HttpRequest
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from continuity.web.conversation_shape import ConversationSerializer, conversation_repr
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput
from memories.services import importing, proposals
from memories.services import memory_writes as services
from memories.services.snapshots import snapshot_members, snapshot_refresh
from memories.web import serializers as s


def json_object(request: HttpRequest) -> dict:
    if not isinstance(request.data, dict) and not hasattr(request.data, "getlist"):
        raise InvalidInput("The body must be a JSON object.", code="malformed_request")
    return request.data


def memory_fields(request: HttpRequest) -> dict:
    """The editable fields in the body; any other field is a 400."""
    data = json_object(request)
    unknown = set(data) - set(services.EDITABLE_FIELDS)
    if unknown:
        raise InvalidInput(f"Unknown memory fields: {', '.join(sorted(unknown))}.", code="unknown_field")
    return {name: data[name] for name in services.EDITABLE_FIELDS if name in data}


def import_drafts(request: HttpRequest) -> list[services.MemoryDraft]:
    """The drafts an import request describes: `memories` list, `text` + `format`, or a `file`."""
    data = json_object(request)
    upload = request.FILES.get("file") if hasattr(request, "FILES") else None
    if upload is not None:
        text = importing.import_file_read(upload)
        return importing.memories_parse(text=text, fmt=data.get("format") or None, filename=upload.name or "")
    if "memories" in data:
        return importing.drafts_from_items(data["memories"])
    if "text" in data:
        return importing.memories_parse(text=data["text"], fmt=data.get("format") or None)
    raise InvalidInput("Send memories (a list), text with a format, or a file.", code="empty_import")


class MemoryListView(APIView):
    @extend_schema(operation_id="memories_list", responses=s.MemoryListSerializer)
    def get(self, request: Request) -> Response:
        return Response({"results": [s.memory_repr(m) for m in services.memories_list()]})

    @extend_schema(request=s.MemoryWriteSerializer, responses={201: s.MemorySerializer, 400: ErrorSerializer})
    def post(self, request: Request) -> Response:
        memory = services.memory_add(**{"text": None, **memory_fields(request)})
        return Response(s.memory_repr(services.memory_with_counts(memory.pk)), status=status.HTTP_201_CREATED)


class MemoryDetailView(APIView):
    @extend_schema(responses={200: s.MemorySerializer, 404: ErrorSerializer})
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(s.memory_repr(services.memory_with_counts(memory_id)))

    @extend_schema(
        request=s.MemoryWriteSerializer,
        responses={200: s.MemorySerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def patch(self, request: Request, memory_id: str) -> Response:
        memory = services.memory_edit(memory_id=memory_id, changes=memory_fields(request))
        return Response(s.memory_repr(services.memory_with_counts(memory.pk)))

    @extend_schema(responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, memory_id: str) -> Response:
        services.memory_delete(memory_id=memory_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryImpactView(APIView):
    """How many existing threads an edit or delete of this memory would change."""

    @extend_schema(responses={200: s.ImpactSerializer, 404: ErrorSerializer})
    def get(self, request: Request, memory_id: str) -> Response:
        return Response({"threads": services.memory_edit_impact(memory_id)})


class MemoryImportView(APIView):
    @extend_schema(
        request=s.MemoryImportSerializer, responses={201: s.ImportResultSerializer, 400: ErrorSerializer}
    )
    def post(self, request: Request) -> Response:
        upload = request.FILES.get("file") if hasattr(request, "FILES") else None
        created = importing.memories_import(
            drafts=import_drafts(request), source_file=upload.name if upload is not None else ""
        )
        return Response({"created": len(created)}, status=status.HTTP_201_CREATED)


class MemoryImportPreviewView(APIView):
    """Parses an import exactly like the import does, and saves nothing."""

    @extend_schema(
        request=s.MemoryImportSerializer, responses={200: s.ImportPreviewSerializer, 400: ErrorSerializer}
    )
    def post(self, request: Request) -> Response:
        drafts = import_drafts(request)
        return Response(
            {
                "count": len(drafts),
                "reaches": "new_threads_only",
                "memories": [
                    {"text": d.text, "category": d.category, "importance": d.importance, "active": d.active}
                    for d in drafts
                ],
            }
        )


class MemoryReorderView(APIView):
    @extend_schema(
        request=s.MemoryReorderSerializer, responses={200: s.MemoryListSerializer, 400: ErrorSerializer}
    )
    def post(self, request: Request) -> Response:
        services.memories_reorder(ids=json_object(request).get("ids"))
        return Response({"results": [s.memory_repr(m) for m in services.memories_list()]})


class ConversationRefreshMemoryView(APIView):
    """Explicit Refresh memory: replace this thread's snapshot with the current eligible set."""

    @extend_schema(request=None, responses={200: ConversationSerializer, 404: ErrorSerializer})
    def post(self, request: Request, conversation_id: str) -> Response:
        return Response(conversation_repr(snapshot_refresh(conversation_id)))


class ConversationMemoriesView(APIView):
    """"Memories in this chat": the snapshot's memories with their current text (no timing, no stale flag)."""

    @extend_schema(responses={200: s.ConversationMemoriesSerializer, 404: ErrorSerializer})
    def get(self, request: Request, conversation_id: str) -> Response:
        return Response({"results": [s.snapshot_member_repr(m) for m in snapshot_members(conversation_id)]})


# --- Memory proposals (issue 35) -------------------------------------------------------


class MemoryProposalListView(APIView):
    """Pending and dismissed proposals, newest first (`?status=` for one status)."""

    @extend_schema(responses={200: s.ProposalListSerializer, 400: ErrorSerializer})
    def get(self, request: Request) -> Response:
        rows = proposals.proposals_list(request.query_params.get("status"))
        return Response({"results": [s.proposal_repr(p) for p in rows]})


class MemoryProposalApproveView(APIView):
    @extend_schema(
        request=s.ProposalApproveSerializer,
        responses={201: s.ProposalApprovedSerializer, 400: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer},
    )
    def post(self, request: Request, proposal_id: str) -> Response:
        data = json_object(request)
        memory = proposals.proposal_approve(proposal_id=proposal_id, changes=dict(data.items()))
        proposal = proposals.access_proposal(proposal_id)
        return Response(
            {"memory": s.memory_repr(services.memory_with_counts(memory.pk)), "proposal": s.proposal_repr(proposal)},
            status=status.HTTP_201_CREATED,
        )


class MemoryProposalDismissView(APIView):
    @extend_schema(
        request=None,
        responses={200: s.ProposalSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, proposal_id: str) -> Response:
        return Response(s.proposal_repr(proposals.proposal_dismiss(proposal_id=proposal_id)))


class MemoryProposalClearDismissedView(APIView):
    @extend_schema(request=None, responses={200: s.ClearedSerializer})
    def post(self, request: Request) -> Response:
        return Response({"cleared": proposals.proposals_clear_dismissed()})
