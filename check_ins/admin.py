"""Check-ins, their runs and Elion's proposals in the admin (`/admin/check_ins/…`), to read only.

What went wrong with a check-in is read here: each run's due time, status, attempts, reason and the turn
and reply it wrote. Every change stays in Settings → Check-ins and its API, whose services hold the rules
(the schedule's checks, the next due time, quarantine's pause, the proposal's decision under its row lock):
the admin adds, changes and deletes nothing.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from check_ins.models import CheckIn, CheckInProposal, CheckInRun


class ReadOnlyAdmin(admin.ModelAdmin):
    """Every field shown, nothing written: no add, change or delete (so no bulk action either)."""

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(CheckIn)
class CheckInAdmin(ReadOnlyAdmin):
    list_display = ("title", "schedule_kind", "schedule_at", "time_zone", "target_kind", "enabled",
                    "paused_reason", "next_run_at", "last_run_at")
    list_filter = ("enabled", "schedule_kind", "target_kind")
    search_fields = ("title", "brief")
    list_select_related = ("conversation",)


@admin.register(CheckInRun)
class CheckInRunAdmin(ReadOnlyAdmin):
    list_display = ("check_in", "due_at", "manual", "status", "attempts", "reason", "finished_at")
    list_filter = ("status", "manual")
    search_fields = ("check_in__title", "reason")
    list_select_related = ("check_in",)
    date_hierarchy = "due_at"


@admin.register(CheckInProposal)
class CheckInProposalAdmin(ReadOnlyAdmin):
    list_display = ("title", "status", "target_kind", "conversation", "created_at", "decided_at")
    list_filter = ("status", "target_kind")
    search_fields = ("title", "brief")
    list_select_related = ("conversation",)
