"""The voice settings (issue 43): `voice`, `voice_instructions`, `voice_language`, `read_aloud_auto`,
`keep_voice_recordings` in `GET|PATCH /api/settings/`, their checks, and that saving them rebuilds no
stored prompt (none of them is read by one)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from transcript.provider.audio import sdk_voices

pytestmark = pytest.mark.django_db


def test_the_defaults_are_marin_and_everything_off():
    body = APIClient().get("/api/settings/").json()
    assert body["voice"] == "marin"
    assert body["voice_instructions"] == ""
    assert body["voice_language"] == ""
    assert body["read_aloud_auto"] is False
    assert body["keep_voice_recordings"] is False


def test_the_voices_are_the_ones_the_installed_sdk_lists():
    voices = sdk_voices()
    assert "marin" in voices and "cedar" in voices and "alloy" in voices
    assert len(voices) == len(set(voices))


def test_voice_settings_are_saved():
    client = APIClient()
    response = client.patch("/api/settings/", {
        "voice": "cedar", "voice_instructions": "Warm and unhurried.", "voice_language": " DE ",
        "read_aloud_auto": True, "keep_voice_recordings": True,
    }, format="json")
    assert response.status_code == 200, response.content
    body = client.get("/api/settings/").json()
    assert (body["voice"], body["voice_instructions"], body["voice_language"]) == ("cedar", "Warm and unhurried.", "de")
    assert body["read_aloud_auto"] is True and body["keep_voice_recordings"] is True


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("voice", "robot", "invalid_voice"),
        ("voice_language", "english", "invalid_voice_language"),
        ("read_aloud_auto", "yes", "invalid_read_aloud_auto"),
        ("keep_voice_recordings", 1, "invalid_keep_voice_recordings"),
        ("voice_instructions", "x" * 4001, None),
    ],
)
def test_bad_voice_settings_are_400s(field, value, code):
    response = APIClient().patch("/api/settings/", {field: value}, format="json")
    assert response.status_code == 400
    if code:
        assert response.json()["error"] == code


def _prompt_writes(change: dict) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert APIClient().patch("/api/settings/", change, format="json").status_code == 200
    return [q["sql"] for q in queries.captured_queries
            if q["sql"].lstrip().upper().startswith(("UPDATE", "INSERT", "DELETE"))
            and "conversations_assistantsettings" not in q["sql"]]


def test_saving_voice_settings_rebuilds_no_stored_prompt(make_conversation):
    from continuity.rules.prompt_store import static_prompt_ensure

    for _ in range(2):
        static_prompt_ensure(make_conversation())
    assert _prompt_writes({"personality": "warm"}) != []  # a prompt setting rebuilds them: the probe sees it
    assert _prompt_writes({"voice": "sage", "voice_instructions": "Calm.", "read_aloud_auto": True}) == []
