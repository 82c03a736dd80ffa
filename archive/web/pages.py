"""The Archive and Library pages. Thin: every write goes through a service.

Both import forms (ChatGPT from `static/js/archive.js`, Claude.ai from
`static/js/archive_claude.js`) post to their API as a background import
(`static/js/archive/import_job.js` sends the export in pieces and follows the
job: done of total, Cancel, the list refreshed when done); without JavaScript
they post here, import at once, and the summary arrives as a flash message
(the memories a Claude.ai export offers wait in the session for the next page,
which shows them once).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from archive.models import ArchiveCollection, ArchiveDocument, ChunkBranch
from archive.services import documents as services
from archive.services import import_jobs, library
from archive.services.import_runs import ImportSummary
from archive.services.importers.claude.store import ClaudeImportSummary
from archive.services.importers.sources import importer_for
from archive.services.search import archive_search
from elion.base.errors import ServiceError
from elion.base.fulltext import query_terms

ARCHIVE_PAGE_SIZE = 25


def _chatgpt_summary_text(summary: ImportSummary) -> str:
    text = (
        f"Imported {summary.conversations} conversation(s) with {summary.messages} message(s) "
        f"(and {summary.alternate_messages} on other branches); "
        f"{summary.duplicates} already in the archive, {summary.skipped} skipped."
    )
    if summary.problems:
        text += " Problems: " + "; ".join(
            f"#{p.index} {p.title or 'untitled'}: {p.reason}" for p in summary.problems[:10]
        ) + ("…" if len(summary.problems) > 10 else ".")
    if summary.custom_instructions_suggestion:
        text += " The export carried custom instructions: Settings → Custom instructions can take them."
    return text


def _claude_summary_text(summary: ImportSummary) -> str:
    assert isinstance(summary, ClaudeImportSummary)
    text = (
        f"Imported {summary.conversations} Claude.ai conversation(s) with {summary.messages} message(s)"
        + (f" and {summary.alternate_messages} on other branches" if summary.alternate_messages else "")
        + (f", and {summary.projects} project(s)" if summary.projects else "")
        + f"; {summary.duplicates} already in the archive, {summary.skipped} skipped."
    )
    problems = summary.as_dict()["problems"]
    if problems:
        text += " Problems: " + "; ".join(
            (f"#{p['index']} {p['title'] or 'untitled'}: " if p["index"] is not None else "") + p["reason"]
            for p in problems[:10]
        ) + ("…" if len(problems) > 10 else ".")
    if summary.memory_suggestions:
        text += f" The export carried {len(summary.memory_suggestions)} memories: review them below."
    if summary.custom_instructions_suggestion:
        text += " A project carried instructions: Settings → Custom instructions can take them."
    return text


# The import form's `action`: the source of its export, and the flash message of its summary.
IMPORT_ACTIONS: dict[str, tuple[str, Callable[[ImportSummary], str]]] = {
    "import_chatgpt": ("chatgpt", _chatgpt_summary_text),
    "import_claude": ("claude", _claude_summary_text),
}

# The memory suggestions an import posted without JavaScript offered (a Claude.ai export's), until the page shows them.
CLAUDE_MEMORY_SUGGESTIONS = "archive_claude_memory_suggestions"


def _import_post(request: HttpRequest, action: str) -> str:
    """Import the posted export at once; its summary as the flash message."""
    source, summary_text = IMPORT_ACTIONS[action]
    summary = importer_for(source).run(
        uploads=request.FILES.getlist("file"),
        collection=request.POST.get("collection") or "conversations",
        assistant_name=request.POST.get("assistant_name", ""),
    )
    suggestions = summary.offers().get("memory_suggestions")
    if suggestions:
        request.session[CLAUDE_MEMORY_SUGGESTIONS] = suggestions
    return summary_text(summary)


def _claude_memory_suggestions_context(request: HttpRequest) -> dict:
    """The suggestions a Claude.ai import left in the session, shown once."""
    suggestions = request.session.pop(CLAUDE_MEMORY_SUGGESTIONS, None) or []
    return {"memory_suggestions": suggestions, "memory_suggestions_json": json.dumps(suggestions, ensure_ascii=False)}


def _archive_post(request: HttpRequest) -> str:
    """Run the posted action; returns the flash message."""
    action = request.POST.get("action")
    upload = request.FILES.get("file")
    if action in IMPORT_ACTIONS:
        return _import_post(request, action)
    title, collection = request.POST.get("title", ""), request.POST.get("collection")
    if upload is not None:
        result = services.archive_document_upload(upload=upload, collection=collection, title=title)
    else:
        result = services.archive_document_add_text(text=request.POST.get("text", ""), collection=collection, title=title)
    if result.duplicate:
        return f"That content is already archived as “{result.document.title}”; nothing was added."
    return f"Archived “{result.document.title}” in {result.document.get_collection_display()} ({result.document.chunk_count} chunks)."


def archive_page(request: HttpRequest) -> HttpResponse:
    error, status = "", 200
    if request.method == "POST":
        try:
            messages.success(request, _archive_post(request))
        except ServiceError as exc:
            error, status = exc.detail, exc.status
        else:
            return redirect("archive")
    query = request.GET.get("q", "").strip()[:500]
    hits = archive_search(query, limit=20) if query else []
    page = _documents_page(request.GET.get("page"))
    totals = dict(ArchiveDocument.objects.order_by().values_list("collection").annotate(n=Count("id")))
    # The page's documents under their collection's heading (collections in their fixed order, as the rows are).
    groups = [
        {"value": value, "label": label, "total": totals.get(value, 0),
         "documents": [d for d in page.object_list if d.collection == value]}
        for value, label in ArchiveCollection.choices
    ]
    context = {
        "collections": ArchiveCollection.choices, "groups": groups, "page": page, "query": query,
        "terms": query_terms(query), "hits": hits, "error": error,
        # A background import still queued or running: the page follows it again after a reload.
        "import_job": import_jobs.import_job_current("chatgpt"),
        "claude_import_job": import_jobs.import_job_current("claude"),
        # The export goes to the API in pieces of at most this many bytes (`archive.services.upload_pieces`).
        "piece_bytes": settings.ELION_UPLOAD_PIECE_BYTES,
    }
    context.update(_claude_memory_suggestions_context(request))
    return render(request, "archive/archive.html", context, status=status)


def _documents_page(number: str | None) -> Page:
    """One page of the archive's documents, by collection then newest first; a bad page number is the nearest page."""
    documents = ArchiveDocument.objects.defer("text").order_by("collection", "-created_at", "-id")
    return Paginator(documents, ARCHIVE_PAGE_SIZE).get_page(number)


def document_page(request: HttpRequest, document_id: int) -> HttpResponse:
    document = services.access_document(document_id)
    chunks = list(document.chunks.order_by("position"))
    # "Continue in a new chat" is offered for a conversation: some turn the archive placed as speech.
    current = [c for c in chunks if c.branch == ChunkBranch.CURRENT]
    continuable = any(chunk.turn is not None and chunk.role in ("user", "assistant") for chunk in current)
    context = {
        "document": document,
        "chunks": current,
        "alternate_chunks": [c for c in chunks if c.branch == ChunkBranch.ALTERNATE],
        "attachments": document.attachments.all(),
        "continuable": continuable,
        # Another system's export: whose words these are, by the name its turns are labelled with.
        "imported_voice": services.imported_voice(document, current),
        # Arriving from a search result (`?q=…`): its words are marked in the chunks.
        "terms": query_terms(request.GET.get("q", "")[:500]),
    }
    return render(request, "archive/document.html", context)


@require_POST
def document_delete(request: HttpRequest, document_id: int) -> HttpResponse:
    services.archive_document_delete(document_id=document_id)
    messages.success(request, "Document removed from the archive.")
    return redirect("archive")


def library_page(request: HttpRequest) -> HttpResponse:
    error, status = "", 200
    if request.method == "POST":
        try:
            upload = request.FILES.get("file")
            if upload is not None:
                result = library.library_file_upload(upload=upload, name=request.POST.get("name", ""))
            else:
                result = library.library_file_add_text(name=request.POST.get("name", ""), text=request.POST.get("text", ""))
        except ServiceError as exc:
            error, status = exc.detail, exc.status
        else:
            if result.duplicate:
                messages.success(request, f"That file is already in the Library as “{result.file.name}”.")
            else:
                messages.success(request, f"Added “{result.file.name}” to the Library.")
            return redirect("library")
    context = {"files": library.library_files(), "error": error}
    return render(request, "archive/library.html", context, status=status)


def library_file_page(request: HttpRequest, file_id: int) -> HttpResponse:
    file = library.access_library_file(file_id)
    try:
        offset = max(int(request.GET.get("offset", 0) or 0), 0)
        page = library.library_page(file, offset=offset)
    except (ValueError, ServiceError):
        return redirect("library-file", file_id=file_id)
    previous = max(offset - library.PAGE_CHARACTERS, 0) if offset else None
    return render(request, "archive/library_file.html", {"file": file, "page": page, "previous": previous})


@require_POST
def library_file_delete(request: HttpRequest, file_id: int) -> HttpResponse:
    library.library_file_delete(file_id=file_id)
    messages.success(request, "File removed from the Library.")
    return redirect("library")
