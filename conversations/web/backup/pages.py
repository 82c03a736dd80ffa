"""Settings → Restore a backup: upload, a dry-run check with counts, then a confirmation (issue 34).

Thin: the rules are `operations.backup.restoring` — the same as `manage.py restore` (a whole-backup check,
a fresh instance only, never a merge). The uploaded zip waits under the data dir, named by a random token,
until the owner confirms or starts again.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from operations.backup.restoring import BackupRefused, RestoreCheck, backup_restore, backup_restore_check

TOKEN_BYTES = 16


def _pending_dir() -> Path:
    return Path(settings.DATA_DIR) / "restore-uploads"


def _pending_path(token: str) -> Path | None:
    if len(token) != TOKEN_BYTES * 2 or not all(ch in "0123456789abcdef" for ch in token):
        return None
    path = _pending_dir() / f"{token}.zip"
    return path if path.is_file() else None


def _page(
    request: HttpRequest, *, error: str = "", check: RestoreCheck | None = None, token: str = "", status: int = 200
) -> HttpResponse:
    rows = sorted(check.rows.items()) if check else []
    return render(request, "settings/restore.html", {
        "error": error, "check": check, "token": token, "rows": rows,
        "total_rows": sum(count for _, count in rows),
    }, status=status)


def restore_page(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    if request.method != "POST":
        return _page(request)
    upload = request.FILES.get("file")
    if upload is None:
        return _page(request, error="Choose a backup zip to check.", status=400)
    token = secrets.token_hex(TOKEN_BYTES)
    _pending_dir().mkdir(parents=True, exist_ok=True)
    path = _pending_dir() / f"{token}.zip"
    with path.open("wb") as target:
        for chunk in upload.chunks():
            target.write(chunk)
    try:
        check = backup_restore_check(path)
    except BackupRefused as exc:
        path.unlink(missing_ok=True)
        return _page(request, error=f"This backup cannot be restored here: {exc}", status=409)
    return _page(request, check=check, token=token)


@require_POST
def restore_confirm(request: HttpRequest, token: str) -> HttpResponse:
    path = _pending_path(token)
    if path is None:
        return _page(request, error="That upload is gone: choose the backup again.", status=404)
    try:
        report = backup_restore(path)
    except BackupRefused as exc:
        return _page(request, error=f"Restore refused, nothing was changed: {exc}", status=409)
    finally:
        path.unlink(missing_ok=True)
    shutil.rmtree(_pending_dir(), ignore_errors=True)
    messages.success(request, f"Restored {sum(report.rows.values())} rows and {report.blobs} files from the backup.")
    return redirect("home")
