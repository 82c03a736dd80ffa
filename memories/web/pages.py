"""The Memories page. Thin: every write goes through a service.

The page states the refresh rule before the owner acts: an add or import
reaches new threads only; an edit or delete shows how many existing threads
it changes (counted from snapshots) on the step before it is saved.
"""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from elion.base.errors import ServiceError
from memories.models import IMPORTANCE_MAX, IMPORTANCE_MIN, Memory, MemoryCategory, MemoryProposal, ProposalStatus
from memories.services import importing
from memories.services import memory_writes as services
from memories.services.snapshots import snapshot_refresh


def _form_context(**extra: object) -> dict:
    return {
        "categories": MemoryCategory.choices,
        "importances": range(IMPORTANCE_MIN, IMPORTANCE_MAX + 1),
        **extra,
    }


def _threads(n: int) -> str:
    return "no existing threads" if n == 0 else ("1 existing thread" if n == 1 else f"{n} existing threads")


def memories_page(request: HttpRequest) -> HttpResponse:
    error, draft, status = "", {}, 200
    if request.method == "POST":
        draft = {key: request.POST.get(key, "") for key in ("text", "category", "importance")}
        try:
            services.memory_add(**draft)
        except ServiceError as exc:
            error, status = exc.detail, exc.status
        else:
            messages.success(request, "Memory saved. It reaches new threads only; existing threads are unchanged.")
            return redirect("memories")
    rows = Memory.objects.annotate(held_by=Count("memberships")).order_by("position", "id")
    context = _form_context(
        memories=rows, error=error, draft=draft, budget=services.memory_section_budget(),
        pending_suggestions=MemoryProposal.objects.filter(status=ProposalStatus.PENDING).count(),
    )
    return render(request, "memories/list.html", context, status=status)


def edit_page(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = services.access_memory(memory_id)
    impact = services.memory_edit_impact(memory.pk)
    error, status = "", 200
    if request.method == "POST":
        changes = {
            "text": request.POST.get("text", ""),
            "category": request.POST.get("category", ""),
            "importance": request.POST.get("importance", ""),
            "active": request.POST.get("active") == "on",
        }
        try:
            services.memory_edit(memory_id=memory.pk, changes=changes)
        except ServiceError as exc:
            error, status = exc.detail, exc.status
            for name, value in changes.items():
                setattr(memory, name, value)
        else:
            messages.success(request, f"Memory updated; that changed {_threads(impact)}.")
            return redirect("memories")
    context = _form_context(memory=memory, impact=impact, impact_text=_threads(impact), error=error)
    return render(request, "memories/edit.html", context, status=status)


def delete_page(request: HttpRequest, memory_id: int) -> HttpResponse:
    memory = services.access_memory(memory_id)
    if request.method == "POST":
        held_by = services.memory_delete(memory_id=memory.pk)
        messages.success(request, f"Memory deleted; it was removed from {_threads(held_by)}.")
        return redirect("memories")
    impact = services.memory_edit_impact(memory.pk)
    return render(request, "memories/delete.html", {"memory": memory, "impact": impact, "impact_text": _threads(impact)})


@require_POST
def move_memory(request: HttpRequest, memory_id: int) -> HttpResponse:
    """Move one memory up or down the global order (the reorder service does the rest)."""
    ids = list(Memory.objects.order_by("position", "id").values_list("id", flat=True))
    if memory_id in ids:
        index = ids.index(memory_id)
        target = index - 1 if request.POST.get("direction") == "up" else index + 1
        if 0 <= target < len(ids):
            ids[index], ids[target] = ids[target], ids[index]
            services.memories_reorder(ids=ids)
    return redirect(f"/memories/#memory-{memory_id}")


def import_page(request: HttpRequest) -> HttpResponse:
    """Two steps: preview (parse, save nothing), then import the previewed text."""
    context = {"text": "", "format": "", "drafts": None, "error": ""}
    status = 200
    if request.method == "POST":
        text = request.POST.get("text", "")
        fmt = request.POST.get("format") or None
        upload = request.FILES.get("file")
        # The file's name rides along from the preview to the import step: the memories' source.
        filename = request.POST.get("filename", "") if upload is None else (upload.name or "")
        try:
            if upload is not None:
                text = importing.import_file_read(upload)
            drafts = importing.memories_parse(text=text, fmt=fmt, filename=filename)
            if request.POST.get("action") == "import":
                created = importing.memories_import(drafts=drafts, source_file=filename)
                messages.success(
                    request,
                    f"Imported {len(created)} memories. They reach new threads only; existing threads are unchanged.",
                )
                return redirect("memories")
            fmt = fmt or importing.guess_format(text, filename)
            labels = dict(MemoryCategory.choices)
            context.update(drafts=[(d, labels.get(d.category, d.category)) for d in drafts])
        except ServiceError as exc:
            context["error"], status = exc.detail, exc.status
        context.update(text=text, format=fmt or "", filename=filename)
    return render(request, "memories/import.html", context, status=status)


@require_POST
def refresh_memory(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """The no-JS path of the chat page's Refresh memory button (JS uses the API)."""
    try:
        conversation = snapshot_refresh(conversation_id)
    except ServiceError as exc:
        return HttpResponse(exc.detail, status=exc.status, content_type="text/plain; charset=utf-8")
    messages.success(request, "Memory refreshed: this thread now holds your current memories.")
    return redirect("chat", conversation_id=conversation.id)
