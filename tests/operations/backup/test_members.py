"""What a backup holds: every app of the project is backed up (`members.APPS`), so a new app cannot be forgotten
(the check-ins app was, until this test); the rows left out are named one by one with their reason
(`members.INSTANCE_MODELS`), so a new row of the elion app is backed up unless it says why not."""

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
    unaccounted = project_apps - set(members.APPS)
    assert unaccounted == set(), f"apps not backed up: {sorted(unaccounted)}"
    labels = {model._meta.label_lower for label in members.APPS for model in apps.get_app_config(label).get_models()}
    assert set(members.INSTANCE_MODELS) <= labels, "every row left out names a model"
    assert all(reason.strip() for reason in members.INSTANCE_MODELS.values())


def test_the_elion_app_backs_up_the_owners_rows_and_leaves_out_the_instances():
    """The assistant's settings, the characters and the audio usage (the conversations app's until issue 45)
    are in a backup; the login failures, the backups' and restores' records and the push subscriptions,
    which describe this instance, are not, and neither a restore's emptiness check nor its replacement
    touches them (`all_app_models`)."""
    backed_up = {members.model_label(model) for model in members.backed_up_models()}
    every = {members.model_label(model) for model in members.all_app_models()}
    elion = {model._meta.label_lower for model in apps.get_app_config("elion").get_models()}
    assert elion & backed_up == {"elion.assistantsettings", "elion.audiousage", "elion.character"}
    assert elion - every == set(members.INSTANCE_MODELS) == {
        "elion.loginfailure", "elion.backuprecord", "elion.restorerun", "elion.pushsubscription"
    }


def test_check_ins_their_runs_and_proposals_are_backed_up():
    labels = {members.model_label(model) for model in members.backed_up_models()}
    assert {"check_ins.checkin", "check_ins.checkinrun", "check_ins.checkinproposal"} <= labels
