"""Rows the project package itself keeps: failed owner logins (throttling), the record of each backup and of
each restore started from Settings, and the browsers subscribed to Web Push.

None is in a backup: each describes this installation, not the owner's life in it
(operations.backup.members.INSTANCE_MODELS).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class LoginFailure(models.Model):
    """Failed owner logins within the current window, for one client address or for everyone (`key`)."""

    key = models.CharField(max_length=100, unique=True)
    failures = models.PositiveIntegerField(default=0)
    window_started_at = models.DateTimeField()
    locked_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.failures} failures"


class BackupStatus(models.TextChoices):
    RUNNING = "running"
    VERIFIED = "verified"
    FAILED = "failed"


class BackupRecord(models.Model):
    """One backup file at a destination, and what its verification found (docs/operations.md).

    `slot` is the scheduled time a scheduled backup was due (null for one made by
    hand): unique, so a slot is backed up once however many clusters or restarts
    ask. `stored` turns true only once the whole file is at its destination
    (a partial upload never counts). `counts` holds what the verifying restore
    found: `{"rows": {model: n}, "blobs": n, "sample": …}`.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    slot = models.DateTimeField(null=True, blank=True, unique=True)
    status = models.CharField(max_length=10, choices=BackupStatus.choices, default=BackupStatus.RUNNING)
    destination = models.CharField(max_length=500, blank=True, default="")
    key = models.CharField(max_length=500, blank=True, default="")
    stored = models.BooleanField(default=False)
    size = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True, default="")
    encrypted = models.BooleanField(default=False)
    verified_at = models.DateTimeField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    failure = models.TextField(blank=True, default="")
    # When a delivery of its task claimed the run, and when one is verifying it (null: none): a second delivery
    # of the same task (the ORM broker's redelivery after `Q_CLUSTER["retry"]`) finds it claimed and returns.
    started_at = models.DateTimeField(null=True, blank=True, editable=False)
    verifying_since = models.DateTimeField(null=True, blank=True, editable=False)
    pruned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"backup {self.created_at:%Y-%m-%d %H:%M} ({self.status})"


class PushSubscription(models.Model):
    """One browser's Web Push subscription (docs/push.md): where to send and the keys to encrypt for it.

    Not in a backup, like the rows above: a subscription is bound to this installation's VAPID key
    (kept in the data dir), so it means nothing to another one. `recent_failures` keeps the last few
    delivery failures, newest first (`[{"at", "status", "message"}]`, `status` null when no answer came);
    a subscription the push service answers 404 or 410 is deleted, not marked.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.URLField(max_length=2000, unique=True)
    p256dh = models.CharField(max_length=100)
    auth = models.CharField(max_length=50)
    user_agent = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    recent_failures = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"push subscription {self.user_agent or self.id}"


class RestoreStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class RestoreRun(models.Model):
    """One restore over this instance started from Settings or `POST /api/backups/{id}/restore/`, and how far it got.

    Kept here, outside the backed-up apps, so a restore never replaces its own
    record. `step` is the step of `operations.backup.replacing` now running;
    `source` says in words what is being restored; `restored` holds what the
    restore put back (`{"rows": {model: n}, "blobs": n}`); `safety_backup` names the
    verified backup of the state before it.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    backup = models.ForeignKey(BackupRecord, null=True, blank=True, on_delete=models.SET_NULL, related_name="restores")
    source = models.CharField(max_length=500, blank=True, default="")
    status = models.CharField(max_length=10, choices=RestoreStatus.choices, default=RestoreStatus.QUEUED)
    step = models.CharField(max_length=40, blank=True, default="")
    detail = models.TextField(blank=True, default="")
    restored = models.JSONField(default=dict, blank=True)
    safety_backup = models.CharField(max_length=1000, blank=True, default="")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"restore {self.created_at:%Y-%m-%d %H:%M} ({self.status})"
