"""HTTP API for attachments (docs/api.md "Attachments").

Thin: each view reads the request, calls one service and shapes the answer.
Uploaded bytes are served only as a download or an inline image, never as a
page: the content type comes from the sniffed bytes, with `nosniff`, a
`Content-Disposition` and a sandboxing CSP.
"""

from __future__ import annotations

from urllib.parse import quote

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversations.web import schema as docs
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput
from transcript.access import access_conversation
from transcript.attachments.manifests import attachment_repr
from transcript.attachments.projection import attachment_verified_content
from transcript.attachments.upload import attachment_too_large, attachment_upload
from transcript.models import AttachmentKind

# Room for the multipart boundaries, headers and a conversation_id field.
MULTIPART_OVERHEAD = 64 * 1024


class AttachmentUploadView(APIView):
    @extend_schema(
        description="multipart `file` (+ optional `conversation_id`: only that conversation may send it).",
        request={"multipart/form-data": docs.AttachmentUploadSerializer},
        responses={201: docs.AttachmentSerializer, 400: ErrorSerializer, 413: ErrorSerializer,
                   415: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        # Refuse an oversize body before Django spools it to disk.
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if declared.isdigit() and int(declared) > settings.ELION_ATTACHMENT_MAX_BYTES + MULTIPART_OVERHEAD:
            raise attachment_too_large()
        if not hasattr(request.data, "getlist"):
            raise InvalidInput("Send the file as a multipart form with field `file`.", code="file_required")
        files = request.FILES.getlist("file")
        if len(files) > 1:
            raise InvalidInput("Upload one file per request.", code="one_file_per_upload")
        attachment = attachment_upload(
            upload=files[0] if files else None, conversation_id=request.data.get("conversation_id")
        )
        return Response(attachment_repr(attachment), status=status.HTTP_201_CREATED)


class AttachmentContentView(APIView):
    """The verified bytes of an attachment listed in this conversation."""

    @extend_schema(responses={200: bytes, 404: ErrorSerializer, 409: ErrorSerializer})
    def get(self, request: Request, conversation_id: str, attachment_id: str) -> Response:
        conversation = access_conversation(conversation_id)
        attachment, data = attachment_verified_content(conversation_id=conversation.id, attachment_id=attachment_id)
        inline = attachment.kind == AttachmentKind.IMAGE
        # Text and PDFs download as plain bytes; only sniffed images display inline.
        content_type = attachment.mime if inline else "application/octet-stream"
        response = HttpResponse(data, content_type=content_type)
        disposition = "inline" if inline else "attachment"
        ascii_name = attachment.name.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
        response["Content-Disposition"] = (
            f"{disposition}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(attachment.name)}"
        )
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["Cache-Control"] = "private, max-age=3600"
        return response
