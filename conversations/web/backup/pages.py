"""Settings → Restore a backup: upload, a dry-run check described in words, then a confirmation (issues 34, 41, 42).

Thin: the rules are `operations.backup` — the same as `manage.py restore`. The page says what the backup holds
and what this instance holds, in words (`operations.backup.descriptions`). Into a fresh instance the backup goes
back at once (`restoring.backup_restore`); over an instance in use, after the owner types the confirmation word,
as a background job (`restore_requests`, the service of `restore --replace`) that `restore_pages` follows. An
encrypted backup (age) is opened with the server's ELION_BACKUP_PASSPHRASE or an age identity the owner pastes
or uploads (read for that request, never stored). The uploaded file waits under the data dir, named by a random
token, until the owner confirms or starts again.
"""

from __future__ import annotations

import secrets
import shutil
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from conversations.web.backup.restore_pages import identity_text
from elion.base.errors import ServiceError
from elion.models import BackupSchedule
from operations.backup import descriptions, encryption, listing, requests, restore_requests, scheduling
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
    fresh = descriptions.instance_is_fresh()
    return render(request, "settings/restore.html", {
        "error": error, "check": check, "token": token, "fresh": fresh,
        "confirm_word": restore_requests.CONFIRM_WORD,
        "backup_holds": descriptions.described(check.rows, check.blobs) if check else [],
        "instance_holds": [] if fresh else descriptions.current_described(),
        "backup_made": _when(check.created_at) if check else None,
    }, status=status)


def _when(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _opened(path: Path, identity: str) -> None:
    """An encrypted upload decrypted in place with the server's passphrase or the owner's age identity;
    BackupRefused when it cannot be."""
    if encryption.file_kind(path) not in ("age", "age+passphrase"):
        return  # a zip, or something the restore check refuses by name
    identities = encryption.identities_from_text(identity) if identity.strip() else []
    opened = path.with_suffix(".opened")
    encryption.decrypt_file(path, opened, passphrase=encryption.configured_keys().passphrase, identities=identities)
    opened.replace(path)


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
        _opened(path, identity_text(request))
        check = backup_restore_check(path, require_empty=False)
    except (BackupRefused, ServiceError) as exc:
        path.unlink(missing_ok=True)
        return _page(request, error=f"This backup cannot be restored, nothing was changed: {exc}", status=409)
    return _page(request, check=check, token=token)


@require_POST
def restore_confirm(request: HttpRequest, token: str) -> HttpResponse:
    path = _pending_path(token)
    if path is None:
        return _page(request, error="That upload is gone: choose the backup again.", status=404)
    if not descriptions.instance_is_fresh():
        return _replace_confirm(request, path, token)
    try:
        report = backup_restore(path)
    except BackupRefused as exc:
        return _page(request, error=f"Restore refused, nothing was changed: {exc}", status=409)
    finally:
        path.unlink(missing_ok=True)
    shutil.rmtree(_pending_dir(), ignore_errors=True)
    messages.success(request, f"Restored {sum(report.rows.values())} rows and {report.blobs} files from the backup.")
    return redirect("home")


def _replace_confirm(request: HttpRequest, path: Path, token: str) -> HttpResponse:
    """An instance in use: the typed confirmation, then the replacement as a background job (`restore_pages`)."""
    try:
        check = backup_restore_check(path, require_empty=False)
        made = _when(check.created_at)
        source = f"the uploaded backup made {made.day} {made:%B %Y at %H:%M}" if made else "the uploaded backup"
        run = restore_requests.restore_from_upload_request(path, request.POST.get("confirm", ""), source)
    except BackupRefused as exc:
        path.unlink(missing_ok=True)
        return _page(request, error=f"Restore refused, nothing was changed: {exc}", status=409)
    except ServiceError as exc:
        if exc.status == 400:  # a missing or wrong confirmation: the upload waits for another try
            return _page(request, error=exc.detail, check=check, token=token, status=400)
        path.unlink(missing_ok=True)
        return _page(request, error=exc.detail, status=exc.status)
    return redirect("settings-restore-run", run_id=run.id)


# --- Settings → Backups ------------------------------------------------------------------


def _number(value: str) -> object:
    return int(value) if value.strip().lstrip("-").isdigit() else value


def backups_page(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    error, status = "", 200
    if request.method == "POST":
        changes: dict[str, object] = {"backup_schedule": request.POST.get("backup_schedule", "")}
        changes.update({name: _number(request.POST.get(name, "")) for name in scheduling.NUMBER_RANGES})
        try:
            scheduling.backup_settings_update(**changes)
        except ServiceError as exc:
            error, status = exc.detail, exc.status
        else:
            messages.success(request, "Backup settings saved.")
            return redirect("settings-backups")
    return render(request, "settings/backups.html", {
        **listing.backups_listing(), "error": error,
        "hours": range(24), "schedules": BackupSchedule.choices,
    }, status=status)


@require_POST
def backups_now(request: HttpRequest) -> HttpResponse:
    try:
        requests.backup_now_request()
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Backing up now: it is written, stored and verified in the background.")
    return redirect("settings-backups")


@require_POST
def backup_verify_again(request: HttpRequest, backup_id: str) -> HttpResponse:
    try:
        requests.backup_verify_request(backup_id)
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, "Verifying again: the backup is fetched, decrypted and restored into a scratch copy.")
    return redirect("settings-backups")
