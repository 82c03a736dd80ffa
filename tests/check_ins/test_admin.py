"""The check-ins admin reads and never writes: every row of the three models is listed and shown, nothing is
added, changed or deleted there (the services behind Settings → Check-ins hold the rules), and a list's
statements do not grow with its rows."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from check_ins.models import CheckIn, CheckInProposal, CheckInRun, RunStatus
from tests.check_ins.support import check_in_due
from tests.support.factories import thread

pytestmark = pytest.mark.django_db

MODELS = ("checkin", "checkinrun", "checkinproposal")


def _rows(count: int) -> dict[str, list]:
    """`count` check-ins (each writing into a conversation of its own), one run each, and one proposal each."""
    made: dict[str, list] = {name: [] for name in MODELS}
    for index in range(count):
        conversation = thread(("hello", "hi"), title=f"Chat {index}")
        check_in = check_in_due(title=f"Interview {index}", target={"kind": "conversation",
                                                                    "conversation_id": str(conversation.pk)})
        made["checkin"].append(check_in)
        made["checkinrun"].append(CheckInRun.objects.create(
            check_in=check_in, due_at=timezone.now() - timedelta(hours=index + 1), status=RunStatus.FAILED,
            reason=f"the provider answered 503 ({index})", attempts=3,
        ))
        made["checkinproposal"].append(CheckInProposal.objects.create(
            title=f"Proposal {index}", brief="ask about the lighthouse", key=f"proposal {index}",
            schedule={"kind": "daily", "at": "09:00"}, conversation=conversation,
        ))
    return made


def _statements(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, response.content.decode()[:2000]
    return len(queries)


@pytest.mark.parametrize("model", MODELS)
def test_each_check_in_model_is_listed_and_shown_in_the_admin(client, model):
    made = _rows(2)
    listed = client.get(f"/admin/check_ins/{model}/")
    assert listed.status_code == 200
    page = listed.content.decode()
    expected = {
        "checkin": ["Interview 0", "Interview 1"],
        "checkinrun": ["the provider answered 503 (0)", "the provider answered 503 (1)"],
        "checkinproposal": ["Proposal 0", "Proposal 1"],
    }[model]
    assert all(text in page for text in expected), page[:3000]
    shown = client.get(f"/admin/check_ins/{model}/{made[model][0].pk}/change/")
    assert shown.status_code == 200
    assert expected[0] in shown.content.decode()


@pytest.mark.parametrize("model", MODELS)
def test_the_check_ins_admin_adds_changes_and_deletes_nothing(client, model):
    row = _rows(1)[model][0]
    model_class = type(row)
    before = model_class.objects.filter(pk=row.pk).values().get()
    assert client.get(f"/admin/check_ins/{model}/add/").status_code == 403
    assert client.post(f"/admin/check_ins/{model}/add/", {"title": "Made in admin"}).status_code == 403
    assert client.post(f"/admin/check_ins/{model}/{row.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.post(f"/admin/check_ins/{model}/", {
        "action": "delete_selected", "_selected_action": [str(row.pk)], "post": "yes",
    }).status_code in (200, 302)
    changed = client.post(f"/admin/check_ins/{model}/{row.pk}/change/", {"title": "Changed in admin", "status": "dismissed"})
    assert changed.status_code == 403
    assert 'name="_save"' not in client.get(f"/admin/check_ins/{model}/{row.pk}/change/").content.decode()
    assert model_class.objects.filter(pk=row.pk).values().get() == before
    assert model_class.objects.count() == 1


@pytest.mark.parametrize("model", MODELS)
def test_a_check_ins_admin_list_does_not_query_per_row(client, model):
    _rows(1)
    _statements(client, f"/admin/check_ins/{model}/")  # the first request of a session makes its rows
    one = _statements(client, f"/admin/check_ins/{model}/")
    _rows(4)
    assert _statements(client, f"/admin/check_ins/{model}/") == one


def test_a_check_in_whose_conversation_was_deleted_is_still_shown(client):
    check_in = _rows(1)["checkin"][0]
    CheckIn.objects.filter(pk=check_in.pk).update(conversation=None)
    assert client.get(f"/admin/check_ins/checkin/{check_in.pk}/change/").status_code == 200
    assert client.get("/admin/check_ins/checkin/").status_code == 200
