"""Provider-reported usage totalled per day and month, and its estimated cost (issue "GPT-5.5 …", usage
and cost): `operations.usage`, `GET /api/usage/`, Settings -> Usage, and the chat page's "Reported by the
provider" block. Real database rows; the send path runs the real SDK against the scripted provider."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import yaml
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from conversations.services.visibility.transitions import (
    conversation_move_locked,
    conversation_trash,
    folder_hidden_set,
)
from elion.base import env
from elion.models import AudioCall, AudioUsage
from operations.usage import USAGE_KEYS, usage_report
from tests.support.factories import thread, turns_append
from tests.support.scripted_provider import ScriptedReply
from transcript.models import Folder, Message, Role

pytestmark = pytest.mark.django_db

UTC = dt.UTC
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def no_prices(settings):
    """No price table unless a test sets one, whatever the environment running the tests says."""
    settings.ELION_PRICE_INPUT_PER_MTOK = None
    settings.ELION_PRICE_CACHED_INPUT_PER_MTOK = None
    settings.ELION_PRICE_OUTPUT_PER_MTOK = None


def usage(input_tokens=None, cached=None, output=None, reasoning=None) -> dict:
    return {"input_tokens": input_tokens, "cached_input_tokens": cached, "output_tokens": output,
            "reasoning_tokens": reasoning}


def reply_with_usage(conversation, created_at: dt.datetime, figures: object, role: str = Role.ASSISTANT) -> Message:
    """One more exchange in `conversation`, its reply stamped with `figures` as `metadata.usage` at `created_at`."""
    _, answer = turns_append(conversation, ("user", "question"), ("assistant", "answer"))
    target = answer if role == Role.ASSISTANT else Message.objects.get(pk=answer.parent_id)
    Message.objects.filter(pk=target.pk).update(created_at=created_at, metadata={"usage": figures})
    return target


def by_period(rows: list[dict], name: str) -> dict[str, dict]:
    return {row[name]: row for row in rows}


def test_totals_per_day_and_month_sum_each_figure_and_keep_null_where_no_reply_reported_it():
    chat = thread()
    reply_with_usage(chat, NOW - dt.timedelta(hours=1), usage(100, 80, 20, 5))
    reply_with_usage(chat, NOW - dt.timedelta(hours=2), usage(50, None, 10, None))
    reply_with_usage(chat, NOW - dt.timedelta(days=1), usage(7, None, 3, None))  # 30 Nov
    reply_with_usage(chat, NOW - dt.timedelta(days=45), usage(1000, 900, 100, 40))  # 17 Oct: months only

    report = usage_report(days=31, months=12, now=NOW).as_dict()

    days = by_period(report["days"], "date")
    assert list(days) == ["2026-12-01", "2026-11-30"]  # newest first; 17 Oct is outside 31 days
    assert days["2026-12-01"] == {
        "date": "2026-12-01", "replies": 2, "input_tokens": 150, "cached_input_tokens": 80, "output_tokens": 30,
        "reasoning_tokens": 5, "estimated_cost_usd": None,
    }
    # No reply that day reported cached or reasoning tokens: unknown, not zero.
    assert days["2026-11-30"]["cached_input_tokens"] is None
    assert days["2026-11-30"]["reasoning_tokens"] is None
    months = by_period(report["months"], "month")
    assert list(months) == ["2026-12", "2026-11", "2026-10"]
    assert months["2026-11"]["replies"] == 1 and months["2026-11"]["input_tokens"] == 7
    assert months["2026-10"] == {
        "month": "2026-10", "replies": 1, "input_tokens": 1000, "cached_input_tokens": 900, "output_tokens": 100,
        "reasoning_tokens": 40, "estimated_cost_usd": None,
    }
    assert report["currency"] == "USD" and report["prices"] is None


def test_days_and_months_limit_the_periods_counted():
    chat = thread()
    for back in range(5):
        reply_with_usage(chat, NOW - dt.timedelta(days=back * 20), usage(1, 0, 1, 0))
    report = usage_report(days=3, months=2, now=NOW).as_dict()
    assert [row["date"] for row in report["days"]] == ["2026-12-01"]
    assert [row["month"] for row in report["months"]] == ["2026-12", "2026-11"]
    # Replies on 1 Dec, 11 Nov, 22 Oct, 2 Oct and 12 Sep: only the first two fall in December and November.
    assert sum(row["replies"] for row in report["months"]) == 2


def test_replies_after_the_report_moment_are_not_counted():
    chat = thread()
    reply_with_usage(chat, NOW, usage(5, 0, 5, 0))
    reply_with_usage(chat, NOW + dt.timedelta(days=1), usage(500, 0, 500, 0))
    (today,) = usage_report(now=NOW).as_dict()["days"]
    assert today["input_tokens"] == 5


def test_days_follow_the_servers_time_zone(settings):
    chat = thread()
    reply_with_usage(chat, dt.datetime(2026, 11, 30, 23, 30, tzinfo=UTC), usage(10, 0, 1, 0))
    assert [row["date"] for row in usage_report(now=NOW).as_dict()["days"]] == ["2026-11-30"]
    settings.TIME_ZONE = "Europe/Berlin"  # 00:30 on 1 December there
    report = usage_report(now=NOW).as_dict()
    assert [row["date"] for row in report["days"]] == ["2026-12-01"]
    assert [row["month"] for row in report["months"]] == ["2026-12"]
    assert report["time_zone"] == "Europe/Berlin"


def test_every_conversation_counts_trashed_and_hidden_ones_too():
    visible, trashed, hidden = thread(title="Visible"), thread(title="Trashed"), thread(title="Hidden")
    for conversation, tokens in ((visible, 1), (trashed, 10), (hidden, 100)):
        reply_with_usage(conversation, NOW, usage(tokens, 0, tokens, 0))
    conversation_trash(conversation_id=trashed.pk)
    folder = Folder.objects.create(name="Private")
    conversation_move_locked(hidden, folder.pk)
    folder_hidden_set(folder_id=folder.pk, hidden=True)
    (today,) = usage_report(now=NOW).as_dict()["days"]
    assert today["replies"] == 3 and today["input_tokens"] == 111


def test_only_assistant_replies_with_counts_are_counted():
    chat = thread()
    reply_with_usage(chat, NOW, usage(3, 1, 2, 0))
    reply_with_usage(chat, NOW, usage(1000, 0, 1000, 0), role=Role.USER)  # not a reply
    reply_with_usage(chat, NOW, "not an object")
    reply_with_usage(chat, NOW, {"input_tokens": "12", "output_tokens": True, "cached_input_tokens": -4})
    (today,) = usage_report(now=NOW).as_dict()["days"]
    # The malformed object is a reply that reported nothing countable; the string is no usage at all.
    assert today == {"date": "2026-12-01", "replies": 2, "input_tokens": 3, "cached_input_tokens": 1,
                     "output_tokens": 2, "reasoning_tokens": 0, "estimated_cost_usd": None}


def test_cost_bills_uncached_input_cached_input_and_output_at_their_prices(settings):
    settings.ELION_PRICE_INPUT_PER_MTOK = Decimal("1.25")
    settings.ELION_PRICE_CACHED_INPUT_PER_MTOK = Decimal("0.125")
    settings.ELION_PRICE_OUTPUT_PER_MTOK = Decimal("10")
    chat = thread()
    reply_with_usage(chat, NOW, usage(1_000_000, 400_000, 150_000, 50_000))
    reply_with_usage(chat, NOW, usage(3, 1, 1, 1))
    report = usage_report(now=NOW).as_dict()
    (today,) = report["days"]
    # Reasoning tokens are inside output and are not priced again.
    expected = (
        (Decimal(1_000_003) - Decimal(400_001)) * Decimal("1.25")
        + Decimal(400_001) * Decimal("0.125")
        + Decimal(150_001) * Decimal("10")
    ) / Decimal(1_000_000)
    assert Decimal(today["estimated_cost_usd"]) == expected.quantize(Decimal("0.000001"))
    assert today["estimated_cost_usd"] == "2.300013"  # 0.7500025 + 0.050000125 + 1.50001, half-up
    assert report["months"][0]["estimated_cost_usd"] == today["estimated_cost_usd"]
    assert report["prices"] == {"input_per_mtok": "1.25", "cached_input_per_mtok": "0.125", "output_per_mtok": "10"}


def test_cached_input_without_its_own_price_costs_the_input_price(settings):
    settings.ELION_PRICE_INPUT_PER_MTOK = Decimal("2")
    settings.ELION_PRICE_CACHED_INPUT_PER_MTOK = None
    settings.ELION_PRICE_OUTPUT_PER_MTOK = Decimal("8")
    reply_with_usage(thread(), NOW, usage(500_000, 500_000, 0, 0))
    report = usage_report(now=NOW).as_dict()
    assert report["days"][0]["estimated_cost_usd"] == "1.000000"
    assert report["prices"]["cached_input_per_mtok"] == "2"


@pytest.mark.parametrize("missing", ["ELION_PRICE_INPUT_PER_MTOK", "ELION_PRICE_OUTPUT_PER_MTOK"])
def test_without_an_input_and_an_output_price_there_is_no_cost(settings, missing):
    settings.ELION_PRICE_INPUT_PER_MTOK = Decimal("1")
    settings.ELION_PRICE_CACHED_INPUT_PER_MTOK = Decimal("0.1")
    settings.ELION_PRICE_OUTPUT_PER_MTOK = Decimal("1")
    setattr(settings, missing, None)
    reply_with_usage(thread(), NOW, usage(10, 0, 10, 0))
    report = usage_report(now=NOW).as_dict()
    assert report["prices"] is None
    assert report["days"][0]["estimated_cost_usd"] is None and report["months"][0]["estimated_cost_usd"] is None


def test_a_period_with_no_input_or_output_count_has_no_cost(settings):
    settings.ELION_PRICE_INPUT_PER_MTOK = Decimal("1")
    settings.ELION_PRICE_OUTPUT_PER_MTOK = Decimal("1")
    reply_with_usage(thread(), NOW, usage(None, None, None, 7))
    (today,) = usage_report(now=NOW).as_dict()["days"]
    assert today["reasoning_tokens"] == 7 and today["estimated_cost_usd"] is None


def test_the_report_reads_all_replies_and_audio_calls_in_one_query_each_however_many():
    chat = thread()
    reply_with_usage(chat, NOW, usage(1, 0, 1, 0))
    AudioUsage.objects.create(kind=AudioCall.SPEECH, model="gpt-4o-mini-tts", characters=10, seconds=1.0)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            usage_report(now=NOW)
        return len(captured.captured_queries)

    few = queries()
    for _ in range(30):
        reply_with_usage(chat, NOW, usage(1, 0, 1, 0))
        AudioUsage.objects.create(kind=AudioCall.SPEECH, model="gpt-4o-mini-tts", characters=10, seconds=1.0)
    assert queries() == few == 2
    assert usage_report(now=NOW).days[0].replies == 31
    assert usage_report().audio.days[0].speech_requests == 31


# --- GET /api/usage/ ------------------------------------------------------------


def test_the_api_answers_days_and_months_with_every_figure(settings):
    settings.ELION_PRICE_INPUT_PER_MTOK = Decimal("1")
    settings.ELION_PRICE_OUTPUT_PER_MTOK = Decimal("4")
    chat = thread()
    today = dt.datetime.now(UTC)
    reply_with_usage(chat, today, usage(2_000, 1_000, 500, 100))
    reply_with_usage(chat, today - dt.timedelta(days=3), usage(1, 0, 1, 0))
    response = Client().get("/api/usage/?days=2")
    assert response.status_code == 200, response.content
    body = response.json()
    assert [row["date"] for row in body["days"]] == [today.date().isoformat()]
    assert set(body["days"][0]) == {"date", "replies", *USAGE_KEYS, "estimated_cost_usd"}
    # No cached-input price: all 2,000 input tokens at 1, and 500 output tokens at 4, per million.
    assert body["days"][0]["estimated_cost_usd"] == "0.004000"
    assert sum(row["replies"] for row in body["months"]) == 2
    assert body["currency"] == "USD" and body["prices"]["output_per_mtok"] == "4"


@pytest.mark.parametrize("query", ["days=0", "days=367", "days=abc", "days=-1", "days=1.5", "days=%EF%BC%95"])
def test_days_outside_1_to_366_answer_400_invalid_days(query):
    response = Client().get(f"/api/usage/?{query}")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_days"


@pytest.mark.parametrize("query", ["months=0", "months=121", "months=x"])
def test_months_outside_1_to_120_answer_400_invalid_months(query):
    response = Client().get(f"/api/usage/?{query}")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_months"


def test_the_largest_windows_are_accepted():
    response = Client().get("/api/usage/?days=366&months=120")
    assert response.status_code == 200
    assert response.json()["days"] == []


def test_the_api_schema_describes_usage():
    schema = yaml.safe_load(Client().get("/api/schema/").content)
    operation = schema["paths"]["/api/usage/"]["get"]
    parameters = {parameter["name"]: parameter["schema"] for parameter in operation["parameters"]}
    assert parameters["days"] == {"type": "integer", "minimum": 1, "maximum": 366}
    assert parameters["months"] == {"type": "integer", "minimum": 1, "maximum": 120}
    assert "400" in operation["responses"]
    assert "estimated_cost_usd" in schema["components"]["schemas"]["UsageDay"]["properties"]


# --- the send path ----------------------------------------------------------------


def send(conversation, content: str) -> dict:
    response = Client().post(
        f"/api/conversations/{conversation.pk}/messages/?stream=false", {"content": content},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.django_db(transaction=True)
def test_replies_sent_through_the_provider_are_totalled(scripted_provider):
    scripted_provider.script(
        ScriptedReply(text="One.", usage={"input_tokens": 120, "output_tokens": 30, "cached_tokens": 100,
                                          "reasoning_tokens": 12}),
        ScriptedReply(text="Two.", usage={"input_tokens": 200, "output_tokens": 40, "cached_tokens": 150,
                                          "reasoning_tokens": 8}),
    )
    chat = thread()
    send(chat, "First")
    send(chat, "Second")
    body = Client().get("/api/usage/").json()
    (today,) = body["days"]
    assert {key: today[key] for key in ("replies", *USAGE_KEYS)} == {
        "replies": 2, "input_tokens": 320, "cached_input_tokens": 250, "output_tokens": 70, "reasoning_tokens": 20,
    }
    assert body["months"][0]["input_tokens"] == 320


# --- pages ------------------------------------------------------------------------


def test_the_usage_page_shows_months_and_days_and_asks_for_prices():
    chat = thread()
    today = dt.datetime.now(UTC)
    reply_with_usage(chat, today, usage(12_345, 2_000, 678, None))
    response = Client().get("/settings/usage/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-usage-period="{today.date().isoformat()}"' in html
    assert f'data-usage-period="{today:%Y-%m}"' in html
    assert '<td data-usage="input_tokens">12,345</td>' in html
    assert '<td data-usage="reasoning_tokens">—</td>' in html
    assert "Set prices to estimate cost" in html
    assert "in the trash and in hidden folders too" in html
    assert "not the app&#x27;s estimates" in html or "not the app's estimates" in html


def test_the_usage_page_shows_the_estimated_cost_with_prices(settings):
    settings.ELION_PRICE_INPUT_PER_MTOK = Decimal("1")
    settings.ELION_PRICE_OUTPUT_PER_MTOK = Decimal("10")
    reply_with_usage(thread(), dt.datetime.now(UTC), usage(1_000_000, 0, 100_000, 0))
    html = Client().get("/settings/usage/").content.decode()
    assert '<td data-usage="estimated_cost_usd">$2.000000</td>' in html
    assert "Set prices to estimate cost" not in html


def test_settings_and_the_navigation_link_to_usage():
    html = Client().get("/settings/").content.decode()
    assert html.count('href="/settings/usage/"') == 2  # the Settings page and the sidebar


@pytest.mark.django_db(transaction=True)
def test_request_size_details_show_the_providers_figures_beside_the_estimates(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"  # reports no reasoning tokens when none are scripted
    chat = thread(binding=None)
    before = Client().get(f"/c/{chat.pk}/").content.decode()
    assert "Reported by the provider" in before and "No reply here has reported usage yet." in before
    scripted_provider.script(
        ScriptedReply(text="Counted.", usage={"input_tokens": 4_321, "output_tokens": 30, "cached_tokens": 4_000}),
    )
    body = send(chat, "Count me")
    for html in (Client().get(f"/c/{chat.pk}/").content.decode(),
                 Client().get(f"/c/{chat.pk}/provider-usage/").content.decode()):
        assert f'data-usage-message-id="{body["assistant_message"]["id"]}"' in html
        assert '<dd data-usage="input_tokens">4,321</dd>' in html
        assert '<dd class="sub" data-usage="cached_input_tokens">4,000</dd>' in html
        assert '<dd data-usage="output_tokens">30</dd>' in html
        assert '<dd class="sub" data-usage="reasoning_tokens">—</dd>' in html  # none reported
    page = Client().get(f"/c/{chat.pk}/").content.decode()
    # Beside the app's estimates, after them, never instead of them.
    assert page.index('data-diag="total_input_tokens"') < page.index("Reported by the provider")
    assert "App estimates" in page


def test_the_provider_usage_fragment_of_an_unknown_conversation_is_404():
    assert Client().get("/c/00000000-0000-0000-0000-000000000000/provider-usage/").status_code == 404


# --- the price table from the environment -------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [("", None), ("  ", None), ("1.25", Decimal("1.25")), ("0", Decimal(0)),
                                               (" 10 ", Decimal(10))])
def test_a_price_is_read_as_a_decimal_or_left_unset(monkeypatch, raw, expected):
    monkeypatch.setenv("ELION_PRICE_INPUT_PER_MTOK", raw)
    assert env.optional_decimal("ELION_PRICE_INPUT_PER_MTOK") == expected


@pytest.mark.parametrize("raw", ["1,25", "cheap", "-1", "NaN", "Infinity"])
def test_a_price_that_is_not_a_finite_non_negative_number_stops_the_app(monkeypatch, raw):
    monkeypatch.setenv("ELION_PRICE_OUTPUT_PER_MTOK", raw)
    with pytest.raises(env.ConfigurationError, match="ELION_PRICE_OUTPUT_PER_MTOK"):
        env.optional_decimal("ELION_PRICE_OUTPUT_PER_MTOK")


def test_prices_in_exponent_form_are_answered_as_plain_decimals(settings):
    settings.ELION_PRICE_INPUT_PER_MTOK = Decimal("1E+1")
    settings.ELION_PRICE_OUTPUT_PER_MTOK = Decimal("2.5E-1")
    assert usage_report(now=NOW).as_dict()["prices"] == {
        "input_per_mtok": "10", "cached_input_per_mtok": "10", "output_per_mtok": "0.25",
    }
