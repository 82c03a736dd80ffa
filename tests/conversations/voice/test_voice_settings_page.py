"""Settings → Voice on the Settings page (issue 43): its own form, every voice the SDK lists with a
preview button, saved through the settings service; a refused value is a flash, nothing else changes."""

from __future__ import annotations

import pytest
from django.test import Client

from elion.base.assistant_settings import assistant_settings_get
from transcript.provider.audio import sdk_voices

pytestmark = pytest.mark.django_db


def test_the_voice_section_lists_every_sdk_voice_with_a_preview():
    page = Client().get("/settings/").content.decode()
    assert 'data-voice-settings-form' in page and 'action="/settings/voice/"' in page
    for voice in sdk_voices():
        assert f'data-voice-preview="{voice}"' in page
    assert '<option value="marin" selected>' in page


def test_the_voice_form_saves_and_leaves_the_other_settings_alone():
    before = assistant_settings_get()
    response = Client().post("/settings/voice/", {
        "voice": "cedar", "voice_instructions": "Calm and clear.", "voice_language": "de",
        "keep_voice_recordings": "on",
    })
    assert response.status_code == 302 and response["Location"] == "/settings/#voice"
    row = assistant_settings_get()
    assert (row.voice, row.voice_instructions, row.voice_language) == ("cedar", "Calm and clear.", "de")
    assert row.keep_voice_recordings is True and row.read_aloud_auto is False
    assert (row.personality, row.display_name, row.web_search) == (before.personality, before.display_name, before.web_search)


def test_a_refused_voice_is_a_flash_and_changes_nothing():
    client = Client()
    response = client.post("/settings/voice/", {"voice": "robot", "read_aloud_auto": "on"}, follow=True)
    assert "voice must be one of" in response.content.decode()
    row = assistant_settings_get()
    assert row.voice == "marin" and row.read_aloud_auto is False
    assert client.get("/settings/voice/").status_code == 405
