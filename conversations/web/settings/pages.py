"""The Settings page. Thin: saving goes through `conversations.services.settings_writes`."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from conversations.services.settings_writes import assistant_settings_update
from elion.base.assistant_settings import assistant_settings_get
from elion.base.errors import ServiceError
from elion.base.time_zones import time_zone_names
from elion.models import (
    Personality,
    ReasoningEffort,
    Verbosity,
)
from operations.backup.scheduling import schedule_sync
from operations.push.subscriptions import push_subscriptions_listing

SETTINGS_TEXT_FIELDS = ("owner_name", "display_name", "personality", "custom_instructions")


# Choices an older form (or a script) may leave out: left as they are when absent.
SETTINGS_CHOICE_FIELDS = ("reasoning_effort", "verbosity", "time_zone")


SETTINGS_FLAGS = (
    "archive_access", "web_search", "provider_store_responses", "reasoning_summary_shown", "image_generation",
    "memory_suggestions", "push_shows_text", "check_in_proposals",
)


def settings_page(request: HttpRequest) -> HttpResponse:
    error = ""
    status = 200
    settings_row = assistant_settings_get()
    if request.method == "POST":
        changes: dict[str, object] = {name: request.POST.get(name, "") for name in SETTINGS_TEXT_FIELDS}
        changes.update({name: request.POST[name] for name in SETTINGS_CHOICE_FIELDS if name in request.POST})
        changes.update({name: request.POST.get(name) == "on" for name in SETTINGS_FLAGS})
        zone_changed = changes.get("time_zone", settings_row.time_zone) != settings_row.time_zone
        try:
            row = assistant_settings_update(**changes)
        except ServiceError as exc:
            error, status = exc.detail, exc.status
            # Show what the owner typed, not the stored values, so nothing is lost.
            for name, value in changes.items():
                setattr(settings_row, name, value)
        else:
            if zone_changed:
                schedule_sync(row)  # the backup hour is on the owner's clock
            messages.success(request, "Settings saved. Existing conversations use them from the next reply.")
            return redirect("settings")
    return render(
        request,
        "settings.html",
        {
            "settings_row": settings_row,
            "personalities": Personality.choices,
            "reasoning_efforts": ReasoningEffort.choices,
            "verbosities": Verbosity.choices,
            "time_zones": time_zone_names(),
            "error": error,
            "push_subscriptions": push_subscriptions_listing(),
        },
        status=status,
    )
