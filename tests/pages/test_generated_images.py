"""Generated images on the pages (issue 22, "Images"): in the reply (a partial preview while it streams on
`responses`, then the stored image, which the browser loads), a failure's tool error in the reply, and the
character's gallery on its page. The browser journey runs against a real Daphne and the scripted provider.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.test import Client
from playwright.sync_api import Page, expect

from conversations.services.characters import character_create
from conversations.services.settings_writes import assistant_settings_update
from conversations.services.visibility.transitions import conversation_trash
from tests.support.chat_page import send, wait_settled
from tests.support.factories import api_call
from tests.support.scripted_provider import ScriptedImageCall, ScriptedReply
from transcript.models import Attachment

GUIDANCE = "silver fur, one blue eye"


@pytest.mark.browser
def test_a_generated_image_appears_in_the_reply_after_its_preview(live_app, page: Page, scripted_server):
    assistant_settings_update(image_generation=True)
    held = threading.Event()
    scripted_server.script(ScriptedReply(
        images=[ScriptedImageCall(partials=2)], text="Here is the lighthouse.", hold=held, hold_after_chunks=1,
    ))
    page.goto(live_app.url)
    page.locator(".sidebar").get_by_role("button", name="New chat").click()
    page.wait_for_url(lambda url: "/c/" in url)
    send(page, "Draw me a lighthouse.")

    reply = page.locator(".message-assistant").last
    preview = reply.locator("[data-live-image] img")
    expect(preview).to_be_visible()
    assert preview.get_attribute("src").startswith("data:image/png;base64,")  # the first partial, not stored
    expect(reply.locator("[data-live-image] figcaption")).to_have_text("Creating an image… (preview)")
    held.set()
    wait_settled(page)

    image = Attachment.objects.get(generated=True)
    shown = reply.locator("[data-generated-image] img")
    expect(shown).to_have_count(1)
    expect(shown).to_have_attribute("src", f"/api/conversations/{page.url.rstrip('/').split('/')[-1]}/attachments/{image.id}/")
    expect(reply).to_contain_text("Here is the lighthouse.")
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=shown.element_handle())
    assert page.js_errors == []


@pytest.fixture
def attachment_root(settings, tmp_path) -> Path:
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    return settings.ELION_ATTACHMENT_ROOT


def made_with(client: Client, content: str, **body) -> str:
    conversation_id = api_call(client, "post", "/api/conversations/", {"persona": "elion"}, status=201)["id"]
    api_call(client, "post", f"/api/conversations/{conversation_id}/messages/?stream=false", {"content": content, **body})
    return conversation_id


@pytest.mark.django_db(transaction=True)
def test_the_chat_page_shows_a_replys_images_and_its_failed_ones(scripted_provider, attachment_root):
    assistant_settings_update(image_generation=True)
    client = Client()
    scripted_provider.script(ScriptedReply(
        images=[ScriptedImageCall(), ScriptedImageCall(error={"code": "moderation_blocked", "message": "Blocked."})],
        text="One of two.",
    ))
    conversation_id = made_with(client, "Draw two lighthouses.")
    image = Attachment.objects.get(generated=True)

    html = client.get(f"/c/{conversation_id}/").content.decode()
    assert f'src="/api/conversations/{conversation_id}/attachments/{image.id}/"' in html
    assert "data-generated-image" in html and "Image not made: The model provider did not make the image: Blocked." in html
    assert '<ul class="message-attachments"' not in html  # generated images are not listed as uploads


@pytest.mark.django_db(transaction=True)
def test_a_characters_page_shows_its_gallery_of_images_from_visible_conversations(scripted_provider, attachment_root):
    assistant_settings_update(image_generation=True)
    lumen = character_create(name="Lumen", image_guidance=GUIDANCE)
    client = Client()
    scripted_provider.script(ScriptedReply(images=[ScriptedImageCall()], text="Lumen by the sea."))
    kept = made_with(client, "Draw Lumen.", pinned_character_id=lumen.pk)
    scripted_provider.script(ScriptedReply(images=[ScriptedImageCall()], text="Lumen again."))
    trashed = made_with(client, "Draw Lumen again.", pinned_character_id=lumen.pk)
    conversation_trash(conversation_id=trashed)
    kept_image = Attachment.objects.get(manifest_entries__message__conversation_id=kept)

    html = client.get(f"/characters/{lumen.pk}/edit/").content.decode()
    assert "Images of Lumen (1)" in html
    assert f'src="/api/conversations/{kept}/attachments/{kept_image.id}/"' in html
    assert f"/api/conversations/{trashed}/" not in html
    empty = character_create(name="Echo")
    assert "No images yet." in client.get(f"/characters/{empty.pk}/edit/").content.decode()


@pytest.mark.django_db
def test_the_settings_page_turns_image_generation_on_and_off(client):
    from elion.models import AssistantSettings

    form = {"owner_name": "AUMA", "display_name": "Elion Voicefire", "personality": "natural", "custom_instructions": ""}
    assert 'name="image_generation">' in client.get("/settings/").content.decode()  # unticked by default
    assert client.post("/settings/", {**form, "image_generation": "on"}).status_code == 302
    assert AssistantSettings.objects.get(pk=1).image_generation is True
    assert 'name="image_generation" checked' in client.get("/settings/").content.decode()
    client.post("/settings/", form)
    assert AssistantSettings.objects.get(pk=1).image_generation is False
