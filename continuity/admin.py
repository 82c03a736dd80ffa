"""Admin "Tools": Continuity Cleanup and the reconciliation status page.

Both are plain views over the same services as the API and the management
commands; neither ever shows continuity text.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_http_methods

from continuity.models import PromptReconciliationFailure
from continuity.rules.policies import policy_markers
from continuity.services.cleanup import (
    CONFIRMATION_PHRASE,
    cleanup_available,
    continuity_cleanup_delete,
    continuity_cleanup_preview,
)
from continuity.services.reconciliation import reconciliation_status
from elion.base.errors import Conflict, Forbidden, InvalidInput
from operations.backup.listing import newest_verified

FAILURES_SHOWN = 200


def _context(request: HttpRequest, title: str) -> dict:
    return {**admin.site.each_context(request), "title": title, "subtitle": None}


@require_http_methods(["GET", "POST"])
def continuity_cleanup_view(request: HttpRequest) -> HttpResponse:
    """GET: a fresh count-only preview and empty confirmations. POST: delete, then back to GET.

    Every outcome redirects, so the page the owner sees next always holds a
    fresh preview with the backup checkbox and the phrase cleared; after a
    scope change that is what makes the owner review the new scope.
    """
    context = _context(request, "Continuity Cleanup")
    try:
        cleanup_available()
    except Forbidden as exc:
        return TemplateResponse(
            request, "admin/tools/continuity_cleanup.html", {**context, "unavailable": exc.detail}, status=403
        )
    if request.method == "POST":
        try:
            removed = continuity_cleanup_delete(
                scope_token=request.POST.get("scope_token"),
                backup_verified=request.POST.get("backup_verified") == "on",
                confirmation=request.POST.get("confirmation"),
            )
        except Conflict as exc:
            messages.warning(request, exc.detail)
        except InvalidInput as exc:
            messages.error(request, f"Nothing was removed: {exc.detail}")
        else:
            messages.success(request, f"Removed {removed} record(s).")
        return redirect(request.path)
    return TemplateResponse(
        request,
        "admin/tools/continuity_cleanup.html",
        {**context, "preview": continuity_cleanup_preview(), "phrase": CONFIRMATION_PHRASE,
         # Named beside the acknowledgement (issue 42); ticking the box stays the owner's act (seed 000).
         "verified_backup": newest_verified()},
    )


def prompt_reconciliation_view(request: HttpRequest) -> HttpResponse:
    """Reconciliation of legacy stored prompts: completion, pending and remaining failures."""
    status = reconciliation_status()
    failures = (
        PromptReconciliationFailure.objects.filter(policy_version=status.policy_version)
        .order_by("-attempts", "conversation_id")
        .values("conversation_id", "attempts", "last_error", "last_failed_at", "next_attempt_at")[:FAILURES_SHOWN]
    )
    context = {
        **_context(request, "Prompt reconciliation"),
        "status": status,
        "failures": list(failures) if status.remaining_failures else [],
        "max_attempts": settings.ELION_RECONCILE_MAX_ATTEMPTS,
        "markers": sorted(policy_markers().items()),
    }
    return TemplateResponse(request, "admin/tools/prompt_reconciliation.html", context)


admin.site.register_tool(name="Continuity Cleanup", slug="continuity-cleanup", view=continuity_cleanup_view)
admin.site.register_tool(name="Prompt reconciliation", slug="prompt-reconciliation", view=prompt_reconciliation_view)
