"""Claiming due times (`check_ins.services.runs`) with an injected clock (`now`): each due time once, whoever
asks and however often; a due time missed while the server was down runs once if younger than
`ELION_CHECK_IN_MAX_LATE`, otherwise is recorded skipped; the lease decides who runs a claimed run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from check_ins.models import CheckIn, CheckInRun, RunStatus
from check_ins.services.check_ins import check_in_create
from check_ins.services.runs import MAX_ATTEMPTS, due_runs_claim, free_runs, run_now_claim, run_release, run_take

pytestmark = pytest.mark.django_db
CREATED = datetime(2026, 12, 1, 6, tzinfo=UTC)


def _daily(at: str = "09:00", zone: str = "UTC") -> CheckIn:
    return check_in_create(now=CREATED, title="Morning", brief="say good morning",
                           schedule={"kind": "daily", "at": at}, time_zone=zone, target={"kind": "new_chat"})


def test_a_due_time_is_claimed_once_however_often_and_by_whoever_asks():
    check_in = _daily()
    due = datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert check_in.next_run_at == due
    assert due_runs_claim(now=due - timedelta(seconds=1)) == []
    [run_id] = due_runs_claim(now=due + timedelta(seconds=5))
    assert due_runs_claim(now=due + timedelta(seconds=6)) == []
    # A second cluster that read the check-in before the first moved it on: its INSERT meets the unique key.
    CheckIn.objects.filter(pk=check_in.pk).update(next_run_at=due)
    assert due_runs_claim(now=due + timedelta(seconds=7)) == []
    run = CheckInRun.objects.get()
    assert (run.id, run.due_at, run.status) == (run_id, due, RunStatus.RUNNING)
    check_in.refresh_from_db()
    assert check_in.next_run_at == due + timedelta(days=1)


def test_missed_while_down_within_the_limit_runs_once(settings):
    settings.ELION_CHECK_IN_MAX_LATE = 6 * 3600
    check_in = _daily()
    due = check_in.next_run_at
    [run_id] = due_runs_claim(now=due + timedelta(hours=5, minutes=59))
    assert CheckInRun.objects.get(pk=run_id).status == RunStatus.RUNNING
    assert due_runs_claim(now=due + timedelta(hours=6)) == []


def test_missed_while_down_beyond_the_limit_is_recorded_skipped(settings):
    settings.ELION_CHECK_IN_MAX_LATE = 6 * 3600
    check_in = _daily()
    due = check_in.next_run_at
    assert due_runs_claim(now=due + timedelta(hours=6, minutes=1)) == []
    run = CheckInRun.objects.get()
    assert (run.due_at, run.status) == (due, RunStatus.SKIPPED)
    assert "missed while the server was down (6.0 h late)" in run.reason
    check_in.refresh_from_db()
    assert check_in.next_run_at == due + timedelta(days=1)


def test_down_for_days_the_newest_due_time_runs_if_young_and_the_older_are_skipped(settings):
    settings.ELION_CHECK_IN_MAX_LATE = 6 * 3600
    check_in = _daily()
    first = check_in.next_run_at
    now = first + timedelta(days=3, hours=2)  # due times on the 1st, 2nd, 3rd and 4th went by
    [run_id] = due_runs_claim(now=now)
    runs = list(CheckInRun.objects.order_by("due_at").values_list("due_at", "status"))
    assert runs == [
        (first, RunStatus.SKIPPED), (first + timedelta(days=1), RunStatus.SKIPPED),
        (first + timedelta(days=2), RunStatus.SKIPPED), (first + timedelta(days=3), RunStatus.RUNNING),
    ]
    assert CheckInRun.objects.get(pk=run_id).due_at == first + timedelta(days=3)


def test_dst_spring_forward_and_fall_back_claim_each_berlin_day_once():
    check_in = check_in_create(now=datetime(2026, 3, 27, 12, tzinfo=UTC), title="Night", brief="b",
                               schedule={"kind": "daily", "at": "02:30"}, time_zone="Europe/Berlin",
                               target={"kind": "new_chat"})
    claimed = []
    now = datetime(2026, 3, 27, 12, tzinfo=UTC)
    while now < datetime(2026, 3, 31, tzinfo=UTC):
        claimed += due_runs_claim(now=now)
        now += timedelta(minutes=15)
    dues = [r.due_at for r in CheckInRun.objects.order_by("due_at")]
    assert dues == [datetime(2026, 3, 28, 1, 30, tzinfo=UTC), datetime(2026, 3, 29, 1, 0, tzinfo=UTC),
                    datetime(2026, 3, 30, 0, 30, tzinfo=UTC)]
    assert len(claimed) == 3
    CheckInRun.objects.all().delete()
    CheckIn.objects.filter(pk=check_in.pk).update(next_run_at=datetime(2026, 10, 24, 0, 30, tzinfo=UTC))
    now = datetime(2026, 10, 24, 0, tzinfo=UTC)
    while now < datetime(2026, 10, 27, tzinfo=UTC):
        due_runs_claim(now=now)
        now += timedelta(minutes=15)
    dues = [r.due_at for r in CheckInRun.objects.order_by("due_at")]
    # 25 October: 02:30 happens twice; it runs at the first one only.
    assert dues == [datetime(2026, 10, 24, 0, 30, tzinfo=UTC), datetime(2026, 10, 25, 0, 30, tzinfo=UTC),
                    datetime(2026, 10, 26, 1, 30, tzinfo=UTC)]


def test_the_lease_lets_one_worker_run_a_claimed_run_and_another_after_it_died():
    check_in = _daily()
    [run_id] = due_runs_claim(now=check_in.next_run_at)
    now = check_in.next_run_at + timedelta(seconds=1)
    assert run_take(run_id, now=now) is not None
    assert run_take(run_id, now=now) is None, "a second worker given the same run"
    assert free_runs(now=now + timedelta(seconds=10)) == []
    later = now + timedelta(hours=1)  # the first worker died: its lease ran out
    assert free_runs(now=later) == [run_id]
    assert run_take(run_id, now=later).attempts == 2
    run_release(CheckInRun.objects.get(pk=run_id), until=later, attempt_spent=False)
    assert CheckInRun.objects.get(pk=run_id).attempts == 1, "waiting for the owner is no spent attempt"
    for _ in range(1, MAX_ATTEMPTS):
        later += timedelta(hours=1)
        assert run_take(run_id, now=later) is not None
    assert run_take(run_id, now=later + timedelta(hours=1)) is None
    run = CheckInRun.objects.get(pk=run_id)
    assert run.status == RunStatus.FAILED and "given up" in run.reason


def test_run_now_with_the_same_key_is_the_same_run():
    check_in = _daily()
    first, created = run_now_claim(check_in=check_in, idempotency_key="k-1", now=CREATED)
    again, created_again = run_now_claim(check_in=check_in, idempotency_key="k-1", now=CREATED + timedelta(seconds=3))
    other, _ = run_now_claim(check_in=check_in, idempotency_key="k-2", now=CREATED + timedelta(seconds=4))
    assert (created, created_again, first.id == again.id, other.id != first.id) == (True, False, True, True)
    assert first.manual and CheckInRun.objects.count() == 2
