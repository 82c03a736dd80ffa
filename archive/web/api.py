"""HTTP API for the archive and the Library (docs/api.md "Archive", "Library").

Views translate requests into service calls and results into responses.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

from django.http import HttpRequest, HttpResponse
from django.utils.http import content_disposition_header
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from archive.models import ArchiveDocument
from archive.services import documents as services
from archive.services import import_jobs, library, upload_pieces
from archive.services.continuation import archive_document_continue
from archive.services.importers.sources import importer_for
from archive.services.search import archive_search
from archive.web import schema as docs
from continuity.web.conversation_shape import ConversationSerializer, conversation_repr
from elion.base.api_errors import ErrorSerializer
from elion.base.errors import InvalidInput

QUERY_MAX_CHARACTERS = 500


def _body(request: HttpRequest) -> dict:
    if not isinstance(request.data, dict) and not hasattr(request.data, "getlist"):
        raise InvalidInput("The body must be a JSON object or a multipart form.", code="malformed_request")
    return request.data


def _text_field(data: Mapping[str, object], name: str) -> str:
    value = data.get(name, "")
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string.", code=f"invalid_{name}")
    return value


def document_repr(document: ArchiveDocument, *, duplicate: bool | None = None) -> dict:
    body = {
        "id": document.pk,
        "title": document.title,
        "collection": document.collection,
        "chunks": document.chunk_count,
        "source": document.source,
        "created_at": document.created_at.isoformat(),
    }
    if duplicate is not None:
        body["duplicate"] = duplicate
    return body


class ArchiveDocumentListView(APIView):
    @extend_schema(
        operation_id="archive_documents_list",
        parameters=[OpenApiParameter("collection", str)],
        responses={200: docs.DocumentListSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        documents = ArchiveDocument.objects.defer("text")
        collection = request.query_params.get("collection")
        if collection:
            documents = documents.filter(collection=services.clean_collection(collection))
        return Response({"results": [document_repr(d) for d in documents[:1000]]})

    @extend_schema(
        description="multipart `file` + `collection` (+ `title`), or JSON `{title, text, collection}`.",
        request={"multipart/form-data": docs.DocumentUploadSerializer, "application/json": docs.DocumentTextSerializer},
        responses={200: docs.DocumentAddedSerializer, 201: docs.DocumentAddedSerializer, 400: ErrorSerializer,
                   413: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        data = _body(request)
        upload = request.FILES.get("file")
        if upload is not None:
            result = services.archive_document_upload(
                upload=upload, collection=data.get("collection"), title=_text_field(data, "title")
            )
        elif "text" in data:
            result = services.archive_document_add_text(
                text=data.get("text"), collection=data.get("collection"), title=_text_field(data, "title")
            )
        else:
            raise InvalidInput("Attach a file, or send title and text.", code="missing_file")
        code = status.HTTP_200_OK if result.duplicate else status.HTTP_201_CREATED
        return Response(document_repr(result.document, duplicate=result.duplicate), status=code)


class ArchiveDocumentDetailView(APIView):
    @extend_schema(responses={200: docs.DocumentDetailSerializer, 404: ErrorSerializer})
    def get(self, request: Request, document_id: str) -> Response:
        document = services.access_document(document_id)
        chunks = [
            {"chunk": c.position, "speaker": c.speaker, "role": c.role, "turn": c.turn, "branch": c.branch,
             "text": c.text}
            for c in document.chunks.order_by("position")
        ]
        return Response({
            **document_repr(document), "metadata": document.metadata, "chunk_list": chunks,
            "attachments": services.document_attachments(document),
        })

    @extend_schema(responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, document_id: str) -> Response:
        services.archive_document_delete(document_id=document_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ArchiveDocumentContinueView(APIView):
    @extend_schema(
        description="Continue an archived conversation in a new chat (its final eight turns in a handoff "
        "bubble). Retry-safe: the same `Idempotency-Key` for the same document answers the first conversation "
        "(200). Optional JSON `{persona}` (default `elion`).",
        request=None,
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=True)],
        responses={201: ConversationSerializer, 200: ConversationSerializer, 400: ErrorSerializer,
                   404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, document_id: str) -> Response:
        data = request.data if request.data else {}
        if not isinstance(data, Mapping):
            raise InvalidInput("The body must be a JSON object.", code="malformed_request")
        conversation, created = archive_document_continue(
            document_id=document_id,
            idempotency_key=request.headers.get("Idempotency-Key"),
            persona=data.get("persona") or "elion",
        )
        return Response(
            conversation_repr(conversation), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class ArchiveDocumentAttachmentView(APIView):
    """The verified bytes of an image an imported conversation showed (always a sniffed image type)."""

    @extend_schema(responses={200: bytes, 404: ErrorSerializer, 409: ErrorSerializer})
    def get(self, request: Request, document_id: str, sha256: str) -> HttpResponse:
        attachment, data = services.document_attachment_content(document_id=document_id, sha256=sha256)
        response = HttpResponse(data, content_type=attachment.mime)
        response["Content-Disposition"] = content_disposition_header(False, attachment.name)
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        response["Cache-Control"] = "private, max-age=3600"
        return response


def _background(request: Request) -> bool:
    raw = request.query_params.get("background", "false")
    if raw not in ("true", "false"):
        raise InvalidInput("background must be true or false.", code="invalid_background")
    return raw == "true"


def _import_job_start(request: Request, kind: str, data: Mapping[str, object], options: dict) -> Response:
    """A background import of `kind` from the request's `file` parts or, in JSON, `upload_ids` (pieces)."""
    if "upload_ids" in data:  # an export sent in pieces (`archive.services.upload_pieces`)
        job = import_jobs.import_job_create_from_pieces(kind=kind, upload_ids=data["upload_ids"], options=options)
    else:
        job = import_jobs.import_job_create(kind=kind, uploads=request.FILES.getlist("file"), options=options)
    return Response({"job_id": str(job.pk)}, status=status.HTTP_202_ACCEPTED)


class ExportImportView(APIView):
    """An export's import, for the source the URL names (`source`, a row of `importers.sources.IMPORTERS`):
    multipart `file` parts (or, in the background, JSON `upload_ids`), optional `collection` and
    `assistant_name`; imported at once (200, the summary) or, with `?background=true`, by a background job
    (202 `{job_id}`). Each source's subclass only names it and documents its schema."""

    source = ""

    def post(self, request: Request) -> Response:
        background = _background(request)
        data = _body(request)
        options = {"collection": data.get("collection") or "conversations",
                   "assistant_name": _text_field(data, "assistant_name")}
        if background:
            return _import_job_start(request, self.source, data, options)
        summary = importer_for(self.source).run(uploads=request.FILES.getlist("file"), **options)
        return Response(summary.as_dict())


def _export_import_schema(*, description: str, request: type, summary: type) -> dict:
    return {"post": extend_schema(
        description=description,
        parameters=[OpenApiParameter("background", bool)],
        request={"multipart/form-data": request},
        responses={200: summary, 202: docs.ImportJobQueuedSerializer, 400: ErrorSerializer, 413: ErrorSerializer},
    )}


@extend_schema_view(**_export_import_schema(
    description="multipart `file` (one or several parts): conversations.json, the export zip, or split "
    "conversations-NNN.json files; optional `collection`, `assistant_name`. With `?background=true` the "
    "files are saved and imported by a background job: 202 `{job_id}`, followed at "
    "`/api/archive/imports/{job_id}/`.",
    request=docs.ChatGPTImportSerializer, summary=docs.ChatGPTImportSummarySerializer,
))
class ChatGPTImportView(ExportImportView):
    source = "chatgpt"


@extend_schema_view(**_export_import_schema(
    description="multipart `file`: the Claude.ai export zip or its conversations.json; optional "
    "`collection`, `assistant_name`. `memory_suggestions` (from the zip's memories.json) can be sent as "
    "they are to the memory import preview; nothing is added to the memories here. With "
    "`?background=true` (multipart `file`, or JSON `{upload_ids}` from `/api/archive/uploads/`) the "
    "export is imported by a background job: 202 `{job_id}`, followed at `/api/archive/imports/{job_id}/`.",
    request=docs.ClaudeImportSerializer, summary=docs.ClaudeImportSummarySerializer,
))
class ClaudeImportView(ExportImportView):
    source = "claude"


class UploadPiecesView(APIView):
    @extend_schema(
        description="Begin an upload sent in pieces (an export too large for one request): JSON `{name, size}` "
        "→ 201 `{upload_id, name, size, received}`. Send the pieces with PUT to `/api/archive/uploads/{id}/`, "
        "then start the import with `POST /api/archive/import/chatgpt/?background=true {\"upload_ids\": [...]}` "
        "(or `/api/archive/import/claude/`).",
        request=docs.UploadCreateSerializer,
        responses={201: docs.UploadStateSerializer, 400: ErrorSerializer, 413: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        data = _body(request)
        state = upload_pieces.piece_upload_create(name=data.get("name"), size=data.get("size"))
        return Response(state, status=status.HTTP_201_CREATED)


class UploadPieceView(APIView):
    @extend_schema(responses={200: docs.UploadStateSerializer, 404: ErrorSerializer})
    def get(self, request: Request, upload_id: str) -> Response:
        return Response(upload_pieces.piece_upload_state(upload_id))

    @extend_schema(
        description="Append one piece (the raw bytes, at most `ELION_UPLOAD_PIECE_BYTES`) at `?offset=N`, "
        "which must be where the upload ends: 409 `upload_offset_mismatch` otherwise (a piece sent twice is "
        "never appended twice; GET tells where to go on).",
        parameters=[OpenApiParameter("offset", int, required=True)],
        request={"application/octet-stream": bytes},
        responses={200: docs.UploadStateSerializer, 400: ErrorSerializer, 404: ErrorSerializer,
                   409: ErrorSerializer, 413: ErrorSerializer},
    )
    def put(self, request: Request, upload_id: str) -> Response:
        state = upload_pieces.piece_append(
            upload_id=upload_id,
            offset=request.query_params.get("offset", ""),
            length=request.META.get("CONTENT_LENGTH") or "0",
            body=request.stream or io.BytesIO(),
        )
        return Response(state)


class ImportJobView(APIView):
    @extend_schema(responses={200: docs.ImportJobSerializer, 404: ErrorSerializer})
    def get(self, request: Request, job_id: str) -> Response:
        return Response(import_jobs.import_job_repr(import_jobs.access_import_job(job_id)))

    @extend_schema(responses={204: None, 404: ErrorSerializer, 409: ErrorSerializer})
    def delete(self, request: Request, job_id: str) -> Response:
        import_jobs.import_job_delete(job_id=job_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ImportJobCancelView(APIView):
    @extend_schema(
        description="Stop a queued or running import after the conversation it is storing (that one is not "
        "kept); everything before it stays. 409 `import_finished` when it is done or failed.",
        request=None, responses={200: docs.ImportJobSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, job_id: str) -> Response:
        return Response(import_jobs.import_job_repr(import_jobs.import_job_cancel(job_id=job_id)))


class ImportJobResumeView(APIView):
    @extend_schema(
        description="Queue a cancelled, failed or stalled import again: it imports only what is missing.",
        request=None, responses={202: docs.ImportJobSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request: Request, job_id: str) -> Response:
        job = import_jobs.import_job_resume(job_id=job_id)
        return Response(import_jobs.import_job_repr(job), status=status.HTTP_202_ACCEPTED)


class ArchiveSearchView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("q", str), OpenApiParameter("collection", str)],
        responses={200: docs.ArchiveSearchSerializer, 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        if len(query) > QUERY_MAX_CHARACTERS:
            raise InvalidInput(f"q can be at most {QUERY_MAX_CHARACTERS} characters.", code="query_too_long")
        collection = request.query_params.get("collection")
        collections = [services.clean_collection(collection)] if collection else None
        hits = archive_search(query, limit=20, collections=collections)
        return Response({"results": [hit.as_dict() for hit in hits]})


class LibraryFileListView(APIView):
    @extend_schema(operation_id="library_files_list", responses={200: docs.LibraryFileListSerializer})
    def get(self, request: Request) -> Response:
        return Response({"results": [library.library_file_repr(f) for f in library.library_files()]})

    @extend_schema(
        description="multipart `file` (+ `name`), or JSON `{name, text}`.",
        request={"multipart/form-data": docs.LibraryUploadSerializer, "application/json": docs.LibraryTextSerializer},
        responses={200: docs.LibraryFileAddedSerializer, 201: docs.LibraryFileAddedSerializer, 400: ErrorSerializer,
                   413: ErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        data = _body(request)
        upload = request.FILES.get("file")
        if upload is not None:
            result = library.library_file_upload(upload=upload, name=_text_field(data, "name"))
        elif "text" in data:
            result = library.library_file_add_text(name=data.get("name"), text=data.get("text"))
        else:
            raise InvalidInput("Attach a file, or send name and text.", code="missing_file")
        body = {**library.library_file_repr(result.file), "duplicate": result.duplicate}
        return Response(body, status=status.HTTP_200_OK if result.duplicate else status.HTTP_201_CREATED)


def _int_param(request: HttpRequest, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise InvalidInput(f"{name} must be an integer.", code="invalid_page") from exc


class LibraryFileDetailView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("offset", int), OpenApiParameter("limit", int)],
        responses={200: docs.LibraryPageSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def get(self, request: Request, file_id: str) -> Response:
        file = library.access_library_file(file_id)
        page = library.library_page(
            file,
            offset=_int_param(request, "offset", 0),
            limit=_int_param(request, "limit", library.PAGE_CHARACTERS),
        )
        return Response({**library.library_file_repr(file), **page})

    @extend_schema(responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, file_id: str) -> Response:
        library.library_file_delete(file_id=file_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
