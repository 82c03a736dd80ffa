"""What a backup holds: every app of the project is either backed up (`members.APPS`) or left out with its reason
(`members.INSTANCE_APPS`), so a new app cannot be forgotten (the check-ins app was, until this test)."""

from __future__ import annotations

from pathlib import Path

from django.apps import apps
from django.conf import settings

from operations.backup import members

ROOT = Path(settings.BASE_DIR).resolve()


def test_every_app_of_the_project_is_backed_up_or_left_out_with_a_reason():
    project_apps = {
        config.label for config in apps.get_app_configs()
        if Path(config.path).resolve().is_relative_to(ROOT)
        and "site-packages" not in Path(config.path).parts  # the venv may sit in the project's folder
        and config.get_models()
    }
    assert project_apps, "the project's apps were found"
    unaccounted = project_apps - set(members.APPS) - set(members.INSTANCE_APPS)
    assert unaccounted == set(), f"apps neither backed up nor left out with a reason: {sorted(unaccounted)}"
    assert set(members.APPS).isdisjoint(members.INSTANCE_APPS)
    assert all(reason.strip() for reason in members.INSTANCE_APPS.values())


def test_check_ins_their_runs_and_proposals_are_backed_up():
    labels = {members.model_label(model) for model in members.backed_up_models()}
    assert {"check_ins.checkin", "check_ins.checkinrun", "check_ins.checkinproposal"} <= labels
