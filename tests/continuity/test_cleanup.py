"""Continuity Cleanup (seed: "Legacy continuity rows" and the Continuity Cleanup paragraphs).

Rules proven here: only with owner password protection and an authenticated
owner; eligible rows hold retired generated-summary text and no verbatim
handoff, rows with a handoff are protected; the preview gives counts and
dates, never text, and a token bound to the exact eligible set; deletion
needs that token, a verified-backup acknowledgement and the exact phrase,
and removes nothing when the scope changed; nothing but those rows is ever
touched; the receipt holds only the number removed; the admin screen clears
both confirmations after a scope change.
"""

from __future__ import annotations

import json
import re
import threading
import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client

from continuity.models import ThreadHandoff
from continuity.services.cleanup import CONFIRMATION_PHRASE, continuity_cleanup_delete, continuity_cleanup_preview
from transcript.models import Conversation

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse"
SUMMARY_TEXT = "GENERATED SUMMARY: AUMA talked about the lighthouse"
RAW_TEXT = "RECENT RAW: the last lines of the old thread"
HANDOFF_TEXT = "AUMA said:\nkeep this verbatim\n\n---\n\nElion Voicefire said:\nalways"
URL = "/api/maintenance/continuity-cleanup/"


@pytest.fixture
def protected(settings):
    settings.ELION_OWNER_PASSWORD = PASSWORD
    settings.ELION_API_TOKEN = "script-token"
    settings.ELION_PROTECTED = True
    return settings


@pytest.fixture
def owner(protected):
    client = Client()
    assert client.post("/api/auth/login/", {"password": PASSWORD}, content_type="application/json").status_code == 200
    return client


def legacy_row(*, summary: str = SUMMARY_TEXT, recent_raw: str = "", handoff: str = "") -> ThreadHandoff:
    source = Conversation.objects.create(title="Old source")
    destination = Conversation.objects.create(title="Old destination")
    return ThreadHandoff.objects.create(
        destination=destination, source=source, summary=summary, recent_raw=recent_raw, handoff=handoff
    )


@pytest.fixture
def rows():
    """Two eligible rows, two protected ones (one also holding retired text), one empty row."""
    return {
        "summary_only": legacy_row(),
        "raw_only": legacy_row(summary="", recent_raw=RAW_TEXT),
        "protected": legacy_row(handoff=HANDOFF_TEXT),
        "protected_with_summary": legacy_row(handoff=HANDOFF_TEXT, summary=SUMMARY_TEXT, recent_raw=RAW_TEXT),
        "empty": legacy_row(summary=""),
    }


def preview(client: Client) -> dict:
    response = client.get(URL)
    assert response.status_code == 200, response.content
    return response.json()


def delete(client: Client, token: str, **overrides):
    body = {"scope_token": token, "backup_verified": True, "confirmation": CONFIRMATION_PHRASE, **overrides}
    return client.post(URL, body, content_type="application/json")


def remaining() -> set[int]:
    return set(ThreadHandoff.objects.values_list("pk", flat=True))


# --- Who may use it --------------------------------------------------------------


def test_unprotected_app_answers_403_owner_password_not_configured(rows):
    client = Client()  # loopback, every request is the owner's, but no password is configured
    for response in (client.get(URL), delete(client, "cc1-anything")):
        assert response.status_code == 403
        assert response.json()["error"] == "owner_password_not_configured"
    assert len(remaining()) == 5


def test_not_logged_in_is_refused(protected, rows):
    client = Client()
    assert client.get(URL).status_code == 401
    assert delete(client, "cc1-anything").status_code == 401
    assert len(remaining()) == 5


def test_bearer_token_is_the_owner_too(protected, rows):
    client = Client(HTTP_AUTHORIZATION="Bearer script-token")
    assert preview(client)["eligible_count"] == 2


def test_session_writes_need_the_csrf_token(protected, rows):
    client = Client(enforce_csrf_checks=True)
    assert client.post("/api/auth/login/", {"password": PASSWORD}, content_type="application/json").status_code == 200
    token = preview(client)["scope_token"]
    response = delete(client, token)
    assert response.status_code == 403 and response.json()["error"] == "csrf_failed"
    assert len(remaining()) == 5


# --- Preview ---------------------------------------------------------------------


def test_preview_counts_eligible_and_protected_rows_and_never_contains_text(owner, rows):
    body = preview(owner)
    assert set(body) == {"eligible_count", "protected_handoff_count", "oldest", "newest", "scope_token"}
    assert body["eligible_count"] == 2 and body["protected_handoff_count"] == 2
    assert body["oldest"] == rows["summary_only"].created_at.isoformat()
    assert body["newest"] == rows["raw_only"].created_at.isoformat()
    raw = json.dumps(body)
    for text in ("GENERATED SUMMARY", "RECENT RAW", "keep this verbatim", "lighthouse", "Old source"):
        assert text not in raw


def test_empty_scope_preview(owner):
    body = preview(owner)
    assert body["eligible_count"] == 0 and body["oldest"] is None and body["newest"] is None


def test_scope_token_is_bound_to_the_exact_eligible_set(protected, rows):
    first = continuity_cleanup_preview().scope_token
    assert continuity_cleanup_preview().scope_token == first
    ThreadHandoff.objects.filter(pk=rows["protected"].pk).update(summary="more retired text")  # still protected
    assert continuity_cleanup_preview().scope_token == first
    ThreadHandoff.objects.filter(pk=rows["summary_only"].pk).update(summary="edited without touching updated_at")
    assert continuity_cleanup_preview().scope_token != first


# --- Deletion --------------------------------------------------------------------


def test_delete_removes_only_eligible_rows_and_the_receipt_holds_only_the_number(owner, rows):
    response = delete(owner, preview(owner)["scope_token"])
    assert response.status_code == 200
    assert response.json() == {"removed": 2}
    assert remaining() == {rows["protected"].pk, rows["protected_with_summary"].pk, rows["empty"].pk}
    kept = ThreadHandoff.objects.get(pk=rows["protected_with_summary"].pk)
    assert kept.handoff == HANDOFF_TEXT and kept.summary == SUMMARY_TEXT  # protected whatever it holds
    assert Conversation.objects.count() == 10  # the rows' conversations stay


def test_protected_rows_are_never_removed_even_with_retired_text(owner):
    legacy_row(handoff=HANDOFF_TEXT, summary=SUMMARY_TEXT)
    legacy_row(handoff="   ", summary=SUMMARY_TEXT)  # whitespace is not an empty handoff: kept
    body = preview(owner)
    assert body["eligible_count"] == 0 and body["protected_handoff_count"] == 2
    assert delete(owner, body["scope_token"]).json() == {"removed": 0}
    assert ThreadHandoff.objects.count() == 2


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"confirmation": "delete retired generated summaries"}, "confirmation_mismatch"),
        ({"confirmation": CONFIRMATION_PHRASE + " "}, "confirmation_mismatch"),
        ({"confirmation": None}, "confirmation_mismatch"),
        ({"backup_verified": False}, "backup_not_verified"),
        ({"backup_verified": "true"}, "backup_not_verified"),
        ({"backup_verified": None}, "backup_not_verified"),
        ({"scope_token": ""}, "scope_token_required"),
        ({"scope_token": None}, "scope_token_required"),
    ],
)
def test_missing_acknowledgement_or_wrong_phrase_is_400_and_removes_nothing(owner, rows, overrides, code):
    response = delete(owner, preview(owner)["scope_token"], **overrides)
    assert response.status_code == 400
    assert response.json()["error"] == code
    assert len(remaining()) == 5


def test_non_object_body_is_400(owner, rows):
    response = owner.post(URL, "[1, 2]", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "malformed_request"
    assert len(remaining()) == 5


@pytest.mark.parametrize("change", ["row_added", "row_saved", "row_bulk_updated", "handoff_cleared", "row_deleted"])
def test_scope_change_after_preview_is_409_and_removes_nothing(owner, rows, change):
    token = preview(owner)["scope_token"]
    if change == "row_added":
        legacy_row()
    elif change == "row_saved":
        row = rows["summary_only"]
        row.summary = "a different generated summary"
        row.save()
    elif change == "row_bulk_updated":
        ThreadHandoff.objects.filter(pk=rows["raw_only"].pk).update(recent_raw=RAW_TEXT + " and more")
    elif change == "handoff_cleared":
        ThreadHandoff.objects.filter(pk=rows["protected_with_summary"].pk).update(handoff="")
    else:
        rows["summary_only"].delete()
    before = remaining()

    response = delete(owner, token)

    assert response.status_code == 409
    assert response.json()["error"] == "scope_changed" and "nothing was removed" in response.json()["detail"]
    assert remaining() == before
    # Reviewing the updated preview and confirming again works.
    assert delete(owner, preview(owner)["scope_token"]).status_code == 200


def test_cleanup_never_touches_any_other_table(owner, rows, thread):
    from archive.services.documents import archive_document_add_text
    from memories.services.memory_writes import memory_add

    memory_add(text="A memory")
    thread(("user", "question"), ("assistant", "answer"), title="Source")
    thread()  # a New Chat with a verbatim handoff row (protected)
    archive_document_add_text(title="Paper", text="AUMA said: hello\n\nElion Voicefire said: hi", collection="papers")
    token = preview(owner)["scope_token"]
    tables = [name for name in connection.introspection.table_names() if name != ThreadHandoff._meta.db_table]

    def counts() -> dict[str, int]:
        with connection.cursor() as cursor:
            result = {}
            for table in tables:
                cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
                result[table] = cursor.fetchone()[0]
            return result

    before = counts()
    assert delete(owner, token).json() == {"removed": 2}
    assert counts() == before


def test_never_automatic_nothing_schedules_it():
    from django_q.models import Schedule

    assert not Schedule.objects.filter(func__icontains="cleanup").exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_insert_waits_for_the_deletion_and_is_not_removed(protected, rows):
    """The deletion locks the table: a row added meanwhile lands after it and survives."""
    if connection.vendor != "postgresql":
        pytest.skip("table lock: PostgreSQL (SQLite's IMMEDIATE transaction serialises writers)")
    from continuity.services import cleanup

    token = continuity_cleanup_preview().scope_token
    inside, proceed, inserted = threading.Event(), threading.Event(), {}
    real_token = cleanup.eligible_scope_token

    def slow_token(queryset=None):
        value = real_token(queryset)
        if transaction.get_connection().in_atomic_block:
            inside.set()
            proceed.wait(10)
        return value

    def writer():
        assert inside.wait(10)
        inserted["row"] = legacy_row()  # blocks on the table lock until the deletion commits
        inserted["at"] = time.monotonic()
        connection.close()

    cleanup.eligible_scope_token = slow_token
    try:
        worker = threading.Thread(target=writer)
        worker.start()
        threading.Timer(1.0, proceed.set).start()
        removed = continuity_cleanup_delete(scope_token=token, backup_verified=True, confirmation=CONFIRMATION_PHRASE)
        committed = time.monotonic()
        worker.join(10)
    finally:
        cleanup.eligible_scope_token = real_token
    assert removed == 2
    assert inserted["at"] >= committed - 0.05  # the insert waited for the deletion's commit
    assert ThreadHandoff.objects.filter(pk=inserted["row"].pk).exists()


# --- Management command ----------------------------------------------------------


def test_command_preview_and_delete(protected, rows):
    out = StringIO()
    call_command("continuity_cleanup", "--preview", stdout=out)
    body = json.loads(out.getvalue())
    assert body["eligible_count"] == 2 and SUMMARY_TEXT not in out.getvalue()
    with pytest.raises(CommandError, match="confirmation_mismatch"):
        call_command(
            "continuity_cleanup", "--delete", "--scope-token", body["scope_token"], "--backup-verified",
            "--confirm", "DELETE", stdout=StringIO(),
        )
    with pytest.raises(CommandError, match="backup_not_verified"):
        call_command(
            "continuity_cleanup", "--delete", "--scope-token", body["scope_token"], "--confirm", CONFIRMATION_PHRASE,
            stdout=StringIO(),
        )
    out = StringIO()
    call_command(
        "continuity_cleanup", "--delete", "--scope-token", body["scope_token"], "--backup-verified",
        "--confirm", CONFIRMATION_PHRASE, stdout=out,
    )
    assert json.loads(out.getvalue()) == {"removed": 2}


def test_command_stale_token_removes_nothing(protected, rows):
    out = StringIO()
    call_command("continuity_cleanup", "--preview", stdout=out)
    legacy_row()
    with pytest.raises(CommandError, match="scope_changed"):
        call_command(
            "continuity_cleanup", "--delete", "--scope-token", json.loads(out.getvalue())["scope_token"],
            "--backup-verified", "--confirm", CONFIRMATION_PHRASE, stdout=StringIO(),
        )
    assert ThreadHandoff.objects.count() == 6


def test_command_refuses_without_owner_password(rows):
    with pytest.raises(CommandError, match="owner_password_not_configured"):
        call_command("continuity_cleanup", "--preview", stdout=StringIO())


# --- Admin: Tools → Continuity Cleanup --------------------------------------------


ADMIN_URL = "/admin/tools/continuity-cleanup/"


def admin_form(html: str) -> dict:
    token = re.search(r'name="scope_token" value="([^"]+)"', html).group(1)
    return {"scope_token": token}


def test_admin_lists_the_tool_under_tools(owner):
    html = owner.get("/admin/").content.decode()
    assert "Tools" in html and ADMIN_URL in html
    assert owner.get("/admin/tools/").status_code == 200


def test_admin_screen_shows_a_fresh_count_only_preview(owner, rows):
    response = owner.get(ADMIN_URL)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-testid="eligible-count">2<' in html and 'data-testid="protected-count">2<' in html
    assert CONFIRMATION_PHRASE in html and 'name="backup_verified"' in html
    for text in ("GENERATED SUMMARY", "RECENT RAW", "keep this verbatim"):
        assert text not in html


def test_admin_scope_change_removes_nothing_and_clears_both_confirmations(owner, rows):
    form = admin_form(owner.get(ADMIN_URL).content.decode())
    legacy_row()
    response = owner.post(
        ADMIN_URL, {**form, "backup_verified": "on", "confirmation": CONFIRMATION_PHRASE}, follow=True
    )
    html = response.content.decode()
    assert "nothing was removed" in html
    assert 'data-testid="eligible-count">3<' in html  # the updated preview
    assert re.search(r'<input type="checkbox" id="backup_verified" name="backup_verified">', html)  # unchecked
    assert 'id="confirmation" name="confirmation" value=""' in html  # cleared
    assert ThreadHandoff.objects.count() == 6


def test_admin_wrong_phrase_or_no_backup_removes_nothing(owner, rows):
    form = admin_form(owner.get(ADMIN_URL).content.decode())
    html = owner.post(ADMIN_URL, {**form, "backup_verified": "on", "confirmation": "yes"}, follow=True).content.decode()
    assert "Nothing was removed" in html
    html = owner.post(ADMIN_URL, {**form, "confirmation": CONFIRMATION_PHRASE}, follow=True).content.decode()
    assert "restorable database backup" in html
    assert ThreadHandoff.objects.count() == 5


def test_admin_receipt_holds_only_the_number_removed(owner, rows):
    form = admin_form(owner.get(ADMIN_URL).content.decode())
    html = owner.post(
        ADMIN_URL, {**form, "backup_verified": "on", "confirmation": CONFIRMATION_PHRASE}, follow=True
    ).content.decode()
    assert "Removed 2 record(s)." in html
    assert 'data-testid="nothing-to-remove"' in html
    assert ThreadHandoff.objects.count() == 3


def test_admin_screen_unavailable_without_owner_password(rows):
    response = Client().get(ADMIN_URL)
    assert response.status_code == 403
    assert "owner password protection" in response.content.decode().lower()
    assert 'name="confirmation"' not in response.content.decode()
