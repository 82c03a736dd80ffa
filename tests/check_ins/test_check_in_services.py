"""The owner's writes to check-ins (`check_ins.services.check_ins`): each leaves `next_run_at` saying when the
check-in is next due; bad input is a 400 with a code; a target outside the `normal` state is refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from check_ins.models import CheckIn
from check_ins.services.check_ins import check_in_create, check_in_delete, check_in_pause, check_in_update
from conversations.services.settings_writes import assistant_settings_update
from elion.base.errors import InvalidInput, NotFound
from tests.support.factories import thread
from transcript.models import Folder

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
DAILY = {"kind": "daily", "at": "09:00"}


def _create(**fields):
    fields = {"title": "Interview", "brief": "ask how the interview went", "schedule": DAILY,
              "target": {"kind": "new_chat"}, **fields}
    return check_in_create(now=NOW, **fields)


def test_a_check_in_takes_settings_time_zone_and_its_first_due_time():
    assistant_settings_update(time_zone="Europe/Berlin")
    check_in = _create()
    assert check_in.time_zone == "Europe/Berlin"
    assert check_in.next_run_at == datetime(2026, 12, 2, 8, tzinfo=UTC)  # 09:00 CET tomorrow
    assert check_in.enabled and check_in.paused_reason == ""


def test_update_pause_enable_delete():
    check_in = _create(time_zone="UTC")
    moved = check_in_update(check_in_id=check_in.pk, now=NOW, schedule={"kind": "daily", "at": "13:00"})
    assert moved.next_run_at == datetime(2026, 12, 1, 13, tzinfo=UTC)
    paused = check_in_pause(check_in=moved, reason="the conversation is in the trash")
    assert (paused.enabled, paused.next_run_at, paused.paused_reason) == (False, None, "the conversation is in the trash")
    enabled = check_in_update(check_in_id=check_in.pk, now=NOW, enabled=True)
    assert (enabled.paused_reason, enabled.next_run_at) == ("", datetime(2026, 12, 1, 13, tzinfo=UTC))
    check_in_delete(check_in_id=check_in.pk)
    assert not CheckIn.objects.exists()
    with pytest.raises(NotFound):
        check_in_delete(check_in_id=check_in.pk)


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"schedule": {"kind": "hourly", "at": "09:00"}}, "invalid_schedule"),
        ({"schedule": {"kind": "daily", "at": "25:00"}}, "invalid_schedule"),
        ({"schedule": {"kind": "daily", "at": "9:00"}}, "invalid_schedule"),
        ({"schedule": {"kind": "daily"}}, "invalid_schedule"),
        ({"schedule": {"kind": "once", "at": "2020-01-01T09:00"}}, "invalid_schedule"),
        ({"schedule": {"kind": "weekdays", "at": "09:00", "days": []}}, "invalid_schedule"),
        ({"schedule": {"kind": "weekdays", "at": "09:00", "days": ["monday"]}}, "invalid_schedule"),
        ({"schedule": {"kind": "every_n_days", "at": "2026-12-02T09:00", "n": 0}}, "invalid_schedule"),
        ({"schedule": {"kind": "every_n_days", "at": "2026-12-02T09:00", "n": True}}, "invalid_schedule"),
        ({"schedule": "daily"}, "invalid_schedule"),
        ({"time_zone": "Mars/Olympus"}, "invalid_time_zone"),
        ({"time_zone": "../../etc/passwd"}, "invalid_time_zone"),
        ({"target": {"kind": "conversation"}}, "invalid_target"),
        ({"target": {"kind": "conversation", "conversation_id": "not-a-uuid"}}, "invalid_target"),
        ({"target": {"kind": "conversation", "conversation_id": "7d3e0a4e-1111-4b4b-9c9c-000000000000"}},
         "invalid_target"),
        ({"target": {"kind": "elsewhere"}}, "invalid_target"),
        ({"brief": "   "}, "invalid_brief"),
        ({"brief": "x" * 4001}, "invalid_brief"),
        ({"title": ""}, "invalid_title"),
        ({"quiet_hours": {"start": "22:00"}}, "invalid_quiet_hours"),
        ({"quiet_hours": {"start": "22:00", "end": "22:00"}}, "invalid_quiet_hours"),
        ({"enabled": "yes"}, "invalid_enabled"),
        ({"colour": "blue"}, "unknown_check_in_field"),
    ],
)
def test_bad_input_is_a_400_with_its_code(fields, code):
    with pytest.raises(InvalidInput) as caught:
        _create(**fields)
    assert caught.value.code == code
    assert not CheckIn.objects.exists()


@pytest.mark.parametrize("state", ["trashed", "shielded", "private", "hidden"])
def test_a_target_outside_the_normal_state_is_refused(state):
    conversation = thread(("user", "Hello"), ("assistant", "Hi"))
    if state == "hidden":
        conversation.folder = Folder.objects.create(name="Away", hidden=True)
        conversation.save()
    else:
        setattr(conversation, state, True)
        conversation.save()
    with pytest.raises(InvalidInput) as caught:
        _create(target={"kind": "conversation", "conversation_id": str(conversation.pk)})
    assert caught.value.code == "invalid_target"


def test_settings_time_zone_is_checked():
    with pytest.raises(InvalidInput) as caught:
        assistant_settings_update(time_zone="Nowhere/Special")
    assert caught.value.code == "invalid_time_zone"
    with pytest.raises(InvalidInput):
        assistant_settings_update(check_in_proposals="yes")
