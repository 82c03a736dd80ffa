"""Scheduled backups run at the owner's hour on the owner's clock (Settings `time_zone`), across summer time."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django_q.models import Schedule

from operations.backup.scheduling import SCHEDULE_NAME, next_due, schedule_realign
from tests.support.factories import api_call

BERLIN = ZoneInfo("Europe/Berlin")


def test_the_next_backup_is_at_the_owners_hour_in_the_owners_zone():
    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)  # 13:00 in Berlin
    assert next_due(now, 3, "Europe/Berlin") == datetime(2026, 12, 4, 2, 0, tzinfo=UTC)  # 03:00 CET
    assert next_due(now, 14, "Europe/Berlin") == datetime(2026, 12, 3, 13, 0, tzinfo=UTC)  # 14:00 CET, today
    assert next_due(now, 3, "UTC") == datetime(2026, 12, 4, 3, 0, tzinfo=UTC)


def test_an_hour_skipped_by_spring_forward_runs_at_the_first_instant_after_it_and_autumns_twice_passed_hour_once():
    before_spring = datetime(2027, 3, 27, 12, 0, tzinfo=UTC)  # 02:00 does not exist in Berlin on 28 March 2027
    due = next_due(before_spring, 2, "Europe/Berlin")
    assert due == datetime(2027, 3, 28, 1, 0, tzinfo=UTC) and due.astimezone(BERLIN).hour == 3
    before_autumn = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)  # 02:00 passes twice in Berlin on 25 October 2026
    due = next_due(before_autumn, 2, "Europe/Berlin")
    assert due == datetime(2026, 10, 25, 0, 0, tzinfo=UTC)  # the first pass, CEST
    assert next_due(due, 2, "Europe/Berlin").astimezone(BERLIN).date().day == 26  # not the second pass


@pytest.mark.django_db
def test_saving_the_time_zone_moves_the_schedule_to_the_owners_hour_there(settings):
    client = Client()
    api_call(client, "patch", "/api/settings/", {"backup_schedule": "daily", "backup_hour": 3})
    assert Schedule.objects.get(name=SCHEDULE_NAME).next_run.astimezone(UTC).hour == 3
    api_call(client, "patch", "/api/settings/", {"time_zone": "Asia/Tokyo"})
    next_run = Schedule.objects.get(name=SCHEDULE_NAME).next_run
    assert next_run.astimezone(ZoneInfo("Asia/Tokyo")).hour == 3 and next_run.astimezone(UTC).hour == 18
    assert api_call(client, "get", "/api/backups/")["schedule"]["time_zone"] == "Asia/Tokyo"


@pytest.mark.django_db
def test_a_daily_step_across_summer_time_is_put_back_on_the_owners_hour():
    client = Client()
    api_call(client, "patch", "/api/settings/", {"time_zone": "Europe/Berlin", "backup_hour": 3})
    # django-q2 stepped 03:00 CET on 27 March by 24 hours: 04:00 CEST on the 28th.
    Schedule.objects.filter(name=SCHEDULE_NAME).update(next_run=datetime(2027, 3, 28, 2, 0, tzinfo=UTC))
    schedule_realign()
    assert Schedule.objects.get(name=SCHEDULE_NAME).next_run == datetime(2027, 3, 28, 1, 0, tzinfo=UTC)
    # A weekly step stays on its day.
    Schedule.objects.filter(name=SCHEDULE_NAME).update(next_run=datetime(2027, 4, 3, 2, 0, tzinfo=UTC))
    schedule_realign()
    assert Schedule.objects.get(name=SCHEDULE_NAME).next_run == datetime(2027, 4, 3, 1, 0, tzinfo=UTC)
