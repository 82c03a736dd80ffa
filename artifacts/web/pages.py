"""The Artifacts page (list with search, one artifact with its versions) and the Markdown download. Thin."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from artifacts import services
from elion.base.errors import ServiceError
from elion.base.markdown_rendering import render_markdown


@require_GET
def artifacts_page(request: HttpRequest) -> HttpResponse:
    query, error, status = request.GET.get("q", ""), "", 200
    try:
        rows = services.artifacts_list(query)
    except ServiceError as exc:
        rows, error, status = [], exc.detail, exc.status
    return render(request, "artifacts/list.html", {"artifacts": rows, "query": query, "error": error}, status=status)


@require_GET
def artifact_page(request: HttpRequest, artifact_id: str) -> HttpResponse:
    artifact = services.access_artifact(artifact_id)
    history = list(reversed(services.artifact_detail_repr(artifact)["history"]))
    context = {
        "artifact": artifact,
        "html": render_markdown(artifact.current_content or ""),
        "history": history,
    }
    return render(request, "artifacts/detail.html", context)


def download_name(title: str) -> str:
    """A safe file name for an artifact's Markdown: its title as a slug."""
    return f"{slugify(title)[:80] or 'artifact'}.md"


@require_GET
def artifact_download(request: HttpRequest, artifact_id: str) -> HttpResponse:
    """The current text (or `?version=n`, the version a reply's card shows) as a `.md` file."""
    artifact = services.access_artifact(artifact_id)
    version = services.access_version(artifact, request.GET.get("version"))
    response = HttpResponse(version.content, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{download_name(artifact.title)}"'
    return response


@require_POST
def artifact_delete_page(request: HttpRequest, artifact_id: str) -> HttpResponse:
    artifact = services.access_artifact(artifact_id)
    services.artifact_delete(artifact_id=artifact.pk)
    messages.success(request, f"Deleted {artifact.title} and its versions.")
    return redirect("artifacts")
