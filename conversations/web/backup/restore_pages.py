"""Settings → Backups → Restore: a stored backup put in place of everything here, after a typed confirmation, as a
background job whose progress the page follows (issue 42).

Thin: the rules are `operations.backup.restore_requests` (the confirmation, opening and checking the backup, the
job), which runs `operations.backup.replacing`, the service of `manage.py restore PATH --replace`. The page says
what this instance holds and what the backup holds in words (`operations.backup.descriptions`). An age identity
the owner pastes or uploads is read for this request only and never written anywhere.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from elion.base.errors import InvalidInput, ServiceError
from elion.models import BackupRecord
from operations.backup import descriptions, encryption, restore_requests

IDENTITY_LIMIT = 64 * 1024  # an age identity file is a few hundred bytes


def identity_text(request: HttpRequest) -> str:
    """The age identity the owner pasted, or the text of the identity file they chose ("" for neither)."""
    upload = request.FILES.get("identity_file")
    if upload is not None:
        if upload.size > IDENTITY_LIMIT:
            raise InvalidInput("That identity file is too large to be an age identity.", code="invalid_identity")
        try:
            return upload.read().decode()
        except UnicodeDecodeError as exc:
            raise InvalidInput("That identity file is not text: choose the file age-keygen wrote.",
                               code="invalid_identity") from exc
    return request.POST.get("identity", "")


def _backup_holds(record: BackupRecord) -> list[str]:
    rows = (record.counts or {}).get("rows")
    return descriptions.described(rows, record.counts.get("blobs", 0)) if rows else []


def backup_restore_page(request: HttpRequest, backup_id: str) -> HttpResponse:
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    record = BackupRecord.objects.filter(pk=backup_id, pruned_at__isnull=True).first()
    if record is None:
        raise Http404("No such backup (it may have been pruned).")
    error, status = "", 200
    if request.method == "POST":
        try:
            run = restore_requests.restore_from_backup_request(
                record.id, request.POST.get("confirm", ""), identity_text(request)
            )
        except ServiceError as exc:
            error, status = exc.detail, exc.status
        else:
            return redirect("settings-restore-run", run_id=run.id)
    return render(request, "settings/backup_restore.html", {
        "backup": record, "backup_holds": _backup_holds(record), "error": error,
        "instance_holds": descriptions.current_described(), "confirm_word": restore_requests.CONFIRM_WORD,
        "needs_identity": record.encrypted and not encryption.configured_keys().can_decrypt,
    }, status=status)


def restore_run_page(request: HttpRequest, run_id: str) -> HttpResponse:
    try:
        run = restore_requests.restore_run_get(run_id)
    except ServiceError as exc:
        raise Http404(exc.detail) from exc
    return render(request, "settings/restore_run.html", {"run": restore_requests.restore_run_repr(run)})
