"""Check-ins and their runs (issue 44, docs/check_ins.md).

A `CheckIn` is the owner's schedule: a title, a brief in the owner's words, when
(`schedule_*` in `time_zone`), where (a new chat each time, or one conversation),
quiet hours, and whether it is enabled. `next_run_at` is the next due instant
(UTC), already moved out of quiet hours; the minute's task finds check-ins by it.

A `CheckInRun` is one due time of one check-in. Its UNIQUE (check_in, due_at)
key is the exactly-once guarantee: a due time is claimed by INSERTing its row,
so two workers, two clusters or a restart can never both claim it. The worker
that runs it holds a lease (`claimed_until`, a conditional UPDATE); a run whose
worker died is taken again once its lease ran out, and its trigger's id is
derived from the run (`trigger_message_id`), so taking it again never makes a
second turn or a second reply (`check_ins.sending.turn`).
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q


class ScheduleKind(models.TextChoices):
    ONCE = "once", "Once"
    DAILY = "daily", "Daily"
    WEEKDAYS = "weekdays", "On chosen weekdays"
    EVERY_N_DAYS = "every_n_days", "Every N days"


class TargetKind(models.TextChoices):
    NEW_CHAT = "new_chat", "A new chat each time"
    CONVERSATION = "conversation", "This conversation"


class CheckIn(models.Model):
    title = models.CharField(max_length=200)
    # In the owner's words ("ask how the interview went"); the provider sees it framed as the owner's
    # scheduled request (`continuity.rules.app_events`), never as the owner speaking now.
    brief = models.TextField()
    schedule_kind = models.CharField(max_length=20, choices=ScheduleKind.choices)
    # Wall time in `time_zone`: "HH:MM" (daily, weekdays) or "YYYY-MM-DDTHH:MM" (once; every_n_days: the first).
    schedule_at = models.CharField(max_length=16)
    # weekdays: lowercase three-letter names ("mon" … "sun"), in week order.
    schedule_days = models.JSONField(default=list, blank=True)
    # every_n_days: N (1 to 365).
    schedule_n = models.PositiveSmallIntegerField(null=True, blank=True)
    time_zone = models.CharField(max_length=64, default="UTC")
    target_kind = models.CharField(max_length=20, choices=TargetKind.choices, default=TargetKind.NEW_CHAT)
    # target_kind=conversation only. A conversation deleted forever leaves NULL here: the run pauses.
    conversation = models.ForeignKey(
        "transcript.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="check_ins",
        db_constraint=False,
    )
    # Quiet hours, wall times in `time_zone` (both or neither; start > end spans midnight). A due time
    # inside them is postponed to their end (docs/check_ins.md "Quiet hours").
    quiet_start = models.TimeField(null=True, blank=True)
    quiet_end = models.TimeField(null=True, blank=True)
    enabled = models.BooleanField(default=True)
    # Why the app paused it ("" when the owner did, or it runs): the owner is told in Settings → Check-ins.
    paused_reason = models.CharField(max_length=300, blank=True, default="")
    # The next due instant (quiet hours applied); NULL when nothing is due any more (a once that ran).
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            # The minute's task: enabled check-ins by due instant.
            models.Index(fields=["next_run_at"], condition=Q(enabled=True), name="check_in_due"),
        ]

    def __str__(self) -> str:
        return self.title


class RunStatus(models.TextChoices):
    RUNNING = "running", "Running"
    DONE = "done", "Done"  # the reply is stored complete (or incomplete/interrupted: it has its text)
    FAILED = "failed", "Failed"  # the reply is stored failed, with Retry
    SKIPPED = "skipped", "Skipped"  # missed while the server was down, older than ELION_CHECK_IN_MAX_LATE
    PAUSED = "paused", "Paused"  # the target may not be written to now; the check-in was paused


FINISHED_STATUSES = (RunStatus.DONE, RunStatus.FAILED, RunStatus.SKIPPED, RunStatus.PAUSED)


class CheckInRun(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    check_in = models.ForeignKey(CheckIn, on_delete=models.CASCADE, related_name="runs")
    # The due instant this run answers (UTC); for Run now, the moment it was asked.
    due_at = models.DateTimeField()
    manual = models.BooleanField(default=False)
    # Run now's Idempotency-Key ("" for a scheduled run).
    idempotency_key = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=20, choices=RunStatus.choices, default=RunStatus.RUNNING)
    reason = models.CharField(max_length=300, blank=True, default="")
    # The lease of the worker running it; NULL before any worker took it.
    claimed_until = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    conversation = models.ForeignKey(
        "transcript.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_constraint=False
    )
    # The trigger's id, derived from the run's id: the send's client_message_id, so a second attempt
    # finds the stored turn and its reply instead of writing new ones.
    trigger_message_id = models.UUIDField(null=True, blank=True)
    reply_message_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-due_at"]
        constraints = [
            models.UniqueConstraint(fields=["check_in", "due_at"], name="check_in_run_once_per_due_time"),
            models.UniqueConstraint(
                fields=["check_in", "idempotency_key"], condition=~Q(idempotency_key=""),
                name="check_in_run_idempotency_key",
            ),
        ]
        indexes = [
            # The minute's task: running runs whose lease ran out.
            models.Index(fields=["claimed_until"], condition=Q(status="running"), name="check_in_run_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.check_in_id} at {self.due_at:%Y-%m-%d %H:%M} ({self.status})"


# --- Proposals (issue 44, item 3: Elion may propose; `check_ins.services.proposals`) ------------------------


class ProposalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DISMISSED = "dismissed", "Dismissed"


class CheckInProposal(models.Model):
    """A check-in Elion suggested with `propose_check_in`; only the owner turns it into one (approve, with
    edits, or dismiss), as with memory proposals.

    `schedule` is the check-ins API's schedule object as checked when proposed (wall times in the owner's
    zone); `target_kind` is where it would write: the proposing `conversation`, or a new chat each time.
    `reply_message_id` and `source_message_id` name the reply whose tool call proposed it and the owner's
    turn that reply answered (plain ids: a conversation deleted forever takes its messages in one raw
    statement, and the proposal then keeps no source). `key` is title and brief as duplicates are compared.
    """

    title = models.CharField(max_length=200)
    brief = models.TextField()
    key = models.TextField(db_index=True)
    schedule = models.JSONField()
    target_kind = models.CharField(max_length=20, choices=TargetKind.choices, default=TargetKind.CONVERSATION)
    reason = models.CharField(max_length=500, blank=True, default="")
    conversation = models.ForeignKey(
        "transcript.Conversation", null=True, blank=True, on_delete=models.SET_NULL, related_name="check_in_proposals",
        db_constraint=False,
    )
    reply_message_id = models.UUIDField(null=True, blank=True, db_index=True)
    source_message_id = models.UUIDField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=20, choices=ProposalStatus.choices, default=ProposalStatus.PENDING)
    # Once approved: the check-in it became (kept NULL after the owner deletes that check-in).
    check_in = models.ForeignKey(CheckIn, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["conversation", "status"], name="check_in_proposal_conv_status")]

    def __str__(self) -> str:
        return f"{self.status}: {self.title}"
