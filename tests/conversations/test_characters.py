"""Character Studio: the API, the page, the admin, and the stored prompts they refresh.

Seed "What the static prompt contains": saved characters are listed by name
with image guidance; like other prompt sources (settings), a change rebuilds
every stored prompt before it reports success.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client

from conversations.services.characters import character_create
from elion.models import Character
from transcript.models import Message

pytestmark = pytest.mark.django_db


def api() -> Client:
    return Client()


def stored_prompt_of(conversation) -> str:
    from continuity.rules.prompt_store import static_prompt_ensure
    from transcript.access import access_conversation

    with transaction.atomic():
        return static_prompt_ensure(access_conversation(conversation.pk, lock=True)).content


def current_prompt(conversation) -> str:
    return Message.objects.get(conversation=conversation, role="system").content


def test_api_create_list_patch_delete():
    created = api().post(
        "/api/characters/", {"name": " Echo ", "description": "A fox.", "image_guidance": "Blue glow."},
        content_type="application/json",
    )
    assert created.status_code == 201
    body = created.json()
    assert body == {"id": body["id"], "name": "Echo", "description": "A fox.", "image_guidance": "Blue glow."}
    assert api().get("/api/characters/").json() == {"results": [body]}

    patched = api().patch(f"/api/characters/{body['id']}/", {"description": "A star fox."}, content_type="application/json")
    assert patched.status_code == 200 and patched.json()["description"] == "A star fox."
    assert patched.json()["name"] == "Echo"

    assert api().delete(f"/api/characters/{body['id']}/").status_code == 204
    assert not Character.objects.exists()


@pytest.mark.parametrize(
    "body, code",
    [
        ({}, "invalid_character"),
        ({"name": "   "}, "invalid_character"),
        ({"name": "x" * 201}, "invalid_character"),
        ({"name": "Echo", "mood": "sly"}, "unknown_field"),
        ({"name": 5}, "invalid_character"),
    ],
)
def test_api_rejects_bad_input_and_saves_nothing(body, code):
    response = api().post("/api/characters/", body, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == code
    assert not Character.objects.exists()


def test_api_unknown_character_is_404():
    for response in (
        api().patch("/api/characters/999/", {"name": "x"}, content_type="application/json"),
        api().delete("/api/characters/999/"),
        api().patch("/api/characters/nope/", {"name": "x"}, content_type="application/json"),
    ):
        assert response.status_code == 404 and response.json()["error"] == "character_not_found"


def test_patch_cannot_blank_the_name():
    echo = character_create(name="Echo")
    response = api().patch(f"/api/characters/{echo.pk}/", {"name": ""}, content_type="application/json")
    assert response.status_code == 400
    assert Character.objects.get().name == "Echo"


def test_stored_prompts_list_characters_and_every_change_rebuilds_them(make_conversation):
    elion = make_conversation(persona="elion")
    clipboard = make_conversation(persona="clipboard")
    assert "## Saved characters" not in stored_prompt_of(elion)  # absent section, no heading
    stored_prompt_of(clipboard)

    created = api().post(
        "/api/characters/", {"name": "Echo", "image_guidance": "Soft blue glow."}, content_type="application/json"
    ).json()
    for conversation in (elion, clipboard):
        prompt = current_prompt(conversation)
        assert "## Saved characters" in prompt and "- Echo: Soft blue glow." in prompt

    api().patch(f"/api/characters/{created['id']}/", {"name": "Echo Fox"}, content_type="application/json")
    assert "- Echo Fox: Soft blue glow." in current_prompt(elion)

    api().delete(f"/api/characters/{created['id']}/")
    assert "## Saved characters" not in current_prompt(elion)
    assert "Echo" not in current_prompt(clipboard)


def test_characters_are_listed_by_name_without_their_description(make_conversation):
    character_create(name="Zed", description="Secret backstory.", image_guidance="")
    character_create(name="Ada", description="", image_guidance="Charcoal sketch.")
    prompt = stored_prompt_of(make_conversation())
    section = prompt[prompt.index("## Saved characters"):]
    assert section.index("- Ada: Charcoal sketch.") < section.index("- Zed")
    assert "Secret backstory." not in prompt


def test_page_lists_adds_edits_and_deletes(client, make_conversation):
    conversation = make_conversation()
    stored_prompt_of(conversation)
    response = client.post("/characters/", {"name": "Echo", "description": "A fox.", "image_guidance": "Blue."})
    assert response.status_code == 302
    echo = Character.objects.get()
    html = client.get("/characters/").content.decode()
    assert "Echo" in html and "A fox." in html and f"/characters/{echo.pk}/edit/" in html
    assert "- Echo: Blue." in current_prompt(conversation)

    bad = client.post("/characters/", {"name": ""})
    assert bad.status_code == 400 and Character.objects.count() == 1

    assert client.get(f"/characters/{echo.pk}/edit/").status_code == 200
    client.post(f"/characters/{echo.pk}/edit/", {"name": "Echo", "description": "A fox.", "image_guidance": "Gold."})
    assert "- Echo: Gold." in current_prompt(conversation)

    assert client.post(f"/characters/{echo.pk}/delete/").status_code == 302
    assert not Character.objects.exists() and "Echo" not in current_prompt(conversation)
    assert client.get("/characters/999/edit/").status_code == 404


def test_admin_writes_go_through_the_services(client, make_conversation):
    conversation = make_conversation()
    stored_prompt_of(conversation)
    response = client.post("/admin/elion/character/add/", {"name": "Echo", "description": "", "image_guidance": "Blue."})
    assert response.status_code == 302, response.content.decode()[:2000]
    echo = Character.objects.get()
    assert "- Echo: Blue." in current_prompt(conversation)
    client.post(f"/admin/elion/character/{echo.pk}/change/", {"name": "Echo", "description": "", "image_guidance": "Red."})
    assert "- Echo: Red." in current_prompt(conversation)
    client.post(f"/admin/elion/character/{echo.pk}/delete/", {"post": "yes"})
    assert not Character.objects.exists() and "Echo" not in current_prompt(conversation)


def test_chat_page_offers_the_characters_for_pinning(client, make_conversation):
    character_create(name="Echo")
    conversation = make_conversation()
    html = client.get(f"/c/{conversation.pk}/").content.decode()
    assert "data-pin-character" in html and ">Echo<" in html
