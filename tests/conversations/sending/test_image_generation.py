"""Image generation through the real send pipeline, the real openai SDK and the scripted provider, on both
selectors: off by default; the Responses built-in `image_generation` tool (partial images streamed, the
final `image_generation_call` stored) and the app's `generate_image` on Chat Completions (the Images API);
a character's image guidance in what the image model received; every image a generated, content-addressed
attachment of the reply, verified like any blob; every failure a tool error, never a failed reply.

Assertions are on the stored rows and on the exact requests the scripted provider received.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from elion.models import Character
from tests.conftest import parse_sse, read_streaming
from tests.support.factories import wait_for
from tests.support.scripted_provider import ScriptedImage, ScriptedImageCall, ScriptedReply, tiny_png, tiny_png_b64
from transcript.attachments import store as attachment_store
from transcript.models import Attachment, AttachmentBlobIdentity, Message, MessageStatus, Role

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

SELECTORS = ["responses", "chat.completions"]
IMAGES_PATH = "/v1/images/generations"
GUIDANCE = "silver fur, one blue eye, drawn in soft watercolour"


@pytest.fixture(autouse=True)
def attachment_root(settings, tmp_path) -> Path:
    settings.ELION_ATTACHMENT_ROOT = tmp_path / "attachments"
    return settings.ELION_ATTACHMENT_ROOT


@sync_to_async
def images_on(on: bool = True) -> None:
    from conversations.services.settings_writes import assistant_settings_update

    assistant_settings_update(image_generation=on)


@sync_to_async
def character(name: str = "Lumen", image_guidance: str = GUIDANCE) -> Character:
    from conversations.services.characters import character_create

    return character_create(name=name, description="a small fox made of light", image_guidance=image_guidance)


async def new_chat(client: AsyncClient) -> str:
    response = await client.post("/api/conversations/", {"persona": "elion"}, content_type="application/json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


async def send(client: AsyncClient, conversation_id: str, content: str, **body) -> list[tuple[str, dict]]:
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/", {"content": content, **body}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return parse_sse(await read_streaming(response))


def tool_names(request) -> list[str]:
    return [t.get("name") or (t.get("function") or {}).get("name") or t["type"] for t in request.body.get("tools", [])]


def model_requests(provider) -> list:
    return [r for r in provider.requests if r.path.rstrip("/") in ("/v1/responses", "/v1/chat/completions")]


def last_tool_output(request) -> str:
    if "input" in request.body:
        return [i["output"] for i in request.body["input"] if i.get("type") == "function_call_output"][-1]
    return [m["content"] for m in request.body["messages"] if m["role"] == "tool"][-1]


@sync_to_async
def the_reply(conversation_id: str) -> Message:
    return Message.objects.filter(conversation_id=conversation_id, role=Role.ASSISTANT).order_by("-seq").first()


@sync_to_async
def generated(conversation_id: str) -> list[Attachment]:
    return list(
        Attachment.objects.filter(manifest_entries__conversation_id=conversation_id, generated=True)
        .order_by("created_at")
    )


async def messages_api(client: AsyncClient, conversation_id: str) -> list[dict]:
    response = await client.get(f"/api/conversations/{conversation_id}/messages/")
    assert response.status_code == 200
    return response.json()["results"]


def scripted_image_reply(selector: str, *, arguments: dict | None = None, text: str = "Here is your picture.") -> list:
    """One reply that makes one image, as each selector does it."""
    if selector == "responses":
        return [ScriptedReply(images=[ScriptedImageCall(partials=2)], text=text)]
    call = {"name": "generate_image", "call_id": "call_img", "arguments": arguments or {"prompt": "a lighthouse at dusk"}}
    return [ScriptedReply(tool_calls=[call]), ScriptedReply(text=text)]


def blob_of(conversation_id: str, attachment: Attachment) -> Path:
    return attachment_store.blob_path(attachment_store.conversation_store(conversation_id), attachment.sha256)


# --- Off by default ---------------------------------------------------------------------


@pytest.mark.parametrize("selector", SELECTORS)
async def test_image_generation_is_off_by_default_and_no_image_tool_is_offered(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    client = AsyncClient()
    assert (await client.get("/api/settings/")).json()["image_generation"] is False
    conversation_id = await new_chat(client)
    await send(client, conversation_id, "Draw me a lighthouse.")

    (request,) = model_requests(scripted_provider)
    assert not {"image_generation", "generate_image"} & set(tool_names(request))
    prompt = await sync_to_async(Message.objects.get)(conversation_id=conversation_id, role=Role.SYSTEM)
    assert "## Image generation" not in prompt.content

    await images_on()
    scripted_provider.clear()
    await send(client, conversation_id, "Now draw it.")
    (request,) = model_requests(scripted_provider)
    expected = "image_generation" if selector == "responses" else "generate_image"
    assert expected in tool_names(request)
    await sync_to_async(prompt.refresh_from_db)()
    assert "## Image generation" in prompt.content  # the settings save rebuilt the stored prompt


async def test_the_image_generation_setting_takes_only_true_or_false(scripted_provider):
    client = AsyncClient()
    for bad in ("yes", 1, None, "true"):
        response = await client.patch("/api/settings/", {"image_generation": bad}, content_type="application/json")
        assert response.status_code == 400, bad
        assert response.json()["error"] == "invalid_image_generation"
    assert (await client.get("/api/settings/")).json()["image_generation"] is False
    response = await client.patch("/api/settings/", {"image_generation": True}, content_type="application/json")
    assert response.status_code == 200 and response.json()["image_generation"] is True


# --- Made, stored, shown, verified --------------------------------------------------------


async def test_an_image_made_on_responses_streams_its_partials_and_is_stored_on_the_reply(scripted_provider, settings):
    settings.ELION_IMAGE_MODEL = "scripted-image-model"
    await images_on()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted_provider.script(*scripted_image_reply("responses"))
    events = await send(client, conversation_id, "Draw me a lighthouse.")

    (request,) = model_requests(scripted_provider)
    assert {"type": "image_generation", "model": "scripted-image-model", "partial_images": 2} in request.body["tools"]
    images = [data for name, data in events if name == "image"]
    assert [d["status"] for d in images] == ["generating", "partial", "partial", "done"]
    assert [d["index"] for d in images if d["status"] == "partial"] == [0, 1]
    assert all(d["b64"] for d in images if d["status"] == "partial")
    (image,) = await generated(conversation_id)
    assert images[-1]["attachment_id"] == str(image.id)
    assert (image.mime, image.kind, image.size) == ("image/png", "image", len(tiny_png()))
    assert blob_of(conversation_id, image).read_bytes() == tiny_png()
    reply = await the_reply(conversation_id)
    assert reply.status == MessageStatus.COMPLETE and reply.content == "Here is your picture."
    (record,) = reply.metadata["generated_images"]
    assert record["source"] == "image_generation" and record["attachment_id"] == str(image.id)
    assert record["prompt"] == "A small scripted picture." and record["character_id"] is None

    *_, last = await messages_api(client, conversation_id)
    assert last["attachments"] == [{"id": str(image.id), "sha256": image.sha256, "name": "generated-image-1.png",
                                    "mime": "image/png", "size": image.size, "generated": True}]
    download = await client.get(f"/api/conversations/{conversation_id}/attachments/{image.id}/")
    assert download.status_code == 200 and download["Content-Type"] == "image/png" and download.content == tiny_png()
    assert "/v1/images/generations" not in [r.path for r in scripted_provider.requests]
    export = await client.get(f"/api/conversations/{conversation_id}/export/?format=markdown")
    markdown = b"".join([chunk async for chunk in export.streaming_content]).decode()
    assert "[Generated image: generated-image-1.png (image/png)]" in markdown


async def test_generate_image_on_chat_completions_asks_the_images_api_on_the_same_binding(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"
    settings.ELION_IMAGE_MODEL = "scripted-image-model"
    await images_on()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted_provider.script(*scripted_image_reply("chat.completions"))
    events = await send(client, conversation_id, "Draw me a lighthouse.")

    (asked,) = scripted_provider.requests_to(IMAGES_PATH)
    assert asked.body == {"model": "scripted-image-model", "prompt": "a lighthouse at dusk", "n": 1}
    assert asked.headers["authorization"] == "Bearer test-key"  # the conversation's own provider and key
    first, second = model_requests(scripted_provider)
    assert "generate_image" in tool_names(first)
    (image,) = await generated(conversation_id)
    result = json.loads(last_tool_output(second))
    assert result["attachment_id"] == str(image.id) and result["character"] is None
    assert [d["status"] for name, d in events if name == "image"] == ["generating", "done"]
    assert ("tool", {"name": "generate_image", "status": "done"}) in events
    reply = await the_reply(conversation_id)
    assert reply.status == MessageStatus.COMPLETE
    (record,) = reply.metadata["generated_images"]
    assert (record["source"], record["call_id"], record["model"]) == ("generate_image", "call_img", "scripted-image-model")
    assert blob_of(conversation_id, image).read_bytes() == tiny_png()


@pytest.mark.parametrize("selector", SELECTORS)
async def test_a_generated_image_is_verified_before_every_later_send(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    await images_on()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted_provider.script(*scripted_image_reply(selector))
    await send(client, conversation_id, "Draw me a lighthouse.")
    (image,) = await generated(conversation_id)

    # Sound: the next send goes through, its identity stays recorded, and the image is not sent back as input.
    scripted_provider.clear()
    await send(client, conversation_id, "Lovely.")
    (request,) = model_requests(scripted_provider)
    assert tiny_png_b64() not in json.dumps(request.body)
    identities = await sync_to_async(list)(AttachmentBlobIdentity.objects.filter(conversation_id=conversation_id))
    assert [i.sha256 for i in identities] == [image.sha256]

    # Tampered: the next send is refused with the upload's 409, naming the image, and reaches no model.
    blob = blob_of(conversation_id, image)
    os.chmod(blob, 0o644)
    blob.write_bytes(tiny_png((1, 2, 3)))  # the same size, other bytes
    scripted_provider.clear()
    response = await client.post(
        f"/api/conversations/{conversation_id}/messages/", {"content": "Again?"}, content_type="application/json"
    )
    assert response.status_code == 409
    body = response.json()
    assert body["error"] == "attachment_tampered" and "generated-image-1.png" in body["detail"]
    assert scripted_provider.requests == []


# --- A character's image guidance -----------------------------------------------------------


async def test_a_named_characters_image_guidance_goes_into_the_image_prompt(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"
    await images_on()
    lumen = await character()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted_provider.script(*scripted_image_reply(
        "chat.completions", arguments={"prompt": "Lumen asleep under the pear tree", "character_id": lumen.pk},
    ))
    await send(client, conversation_id, "Draw Lumen asleep.")

    (asked,) = scripted_provider.requests_to(IMAGES_PATH)
    assert asked.body["prompt"] == f"Lumen asleep under the pear tree\n\nImage guidance for Lumen: {GUIDANCE}"
    result = json.loads(last_tool_output(model_requests(scripted_provider)[-1]))
    assert result["character"] == {"id": lumen.pk, "name": "Lumen"}
    (image,) = await generated(conversation_id)
    assert image.generated_character_id == lumen.pk
    (record,) = (await the_reply(conversation_id)).metadata["generated_images"]
    assert (record["character_id"], record["character_name"]) == (lumen.pk, "Lumen")


@pytest.mark.parametrize("selector", SELECTORS)
async def test_the_pinned_characters_guidance_reaches_the_image_of_no_named_character(scripted_provider, settings, selector):
    settings.ELION_API_SELECTOR = selector
    await images_on()
    lumen = await character()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted_provider.script(*scripted_image_reply(selector, arguments={"prompt": "a fox on the shore"}))
    await send(client, conversation_id, "Draw them by the sea.", pinned_character_id=lumen.pk)

    if selector == "chat.completions":
        (asked,) = scripted_provider.requests_to(IMAGES_PATH)
        assert asked.body["prompt"] == f"a fox on the shore\n\nImage guidance for Lumen: {GUIDANCE}"
    else:
        # The provider writes the image prompt itself: the guidance is in front of the model, in the request.
        (request,) = model_requests(scripted_provider)
        assert f"Image guidance: {GUIDANCE}" in json.dumps(request.body["input"], ensure_ascii=False)
    (image,) = await generated(conversation_id)
    assert image.generated_character_id == lumen.pk
    (record,) = (await the_reply(conversation_id)).metadata["generated_images"]
    assert record["character_id"] == lumen.pk


async def test_an_unknown_character_id_is_a_tool_error_and_no_image_is_asked_for(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"
    await images_on()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted_provider.script(*scripted_image_reply("chat.completions", arguments={"prompt": "x", "character_id": 999}))
    await send(client, conversation_id, "Draw them.")

    assert scripted_provider.requests_to(IMAGES_PATH) == []
    assert last_tool_output(model_requests(scripted_provider)[-1]) == "Tool error: no saved character has id 999."


# --- Failures are tool errors ----------------------------------------------------------------

FAILURES = {
    "refused": (ScriptedImage(status=400, error_code="moderation_blocked", error_message="Your request was rejected."),
                "refused to make this image (content policy): Your request was rejected", "image_refused"),
    "provider_error": (ScriptedImage(status=500), "The model provider failed (HTTP 500)", "provider_http_error"),
    "bad_base64": (ScriptedImage(b64="not*base64!"), "not valid base64", "image_rejected"),
    "not_an_image": (ScriptedImage(b64="aGVsbG8gd29ybGQ="), "not an image", "image_rejected"),
    "too_large": (ScriptedImage(), "larger than the attachment limit", "image_rejected"),
}


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_a_failed_image_on_chat_completions_is_a_tool_error_in_a_complete_reply(scripted_provider, settings, failure):
    settings.ELION_API_SELECTOR = "chat.completions"
    if failure == "too_large":
        settings.ELION_ATTACHMENT_MAX_BYTES = 40
    await images_on()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted, words, code = FAILURES[failure]
    scripted_provider.script_images(scripted)
    scripted_provider.script(*scripted_image_reply("chat.completions", text="I could not make it."))
    events = await send(client, conversation_id, "Draw me a lighthouse.")

    output = last_tool_output(model_requests(scripted_provider)[-1])
    assert output.startswith("Tool error: the image was not made.") and words in output
    assert ("tool", {"name": "generate_image", "status": "error"}) in events
    assert [d["status"] for name, d in events if name == "image"] == ["generating", "error"]
    reply = await the_reply(conversation_id)
    assert reply.status == MessageStatus.COMPLETE and reply.content == "I could not make it."
    (record,) = reply.metadata["generated_images"]
    assert words in record["error"]["detail"] and record["error"]["error"] == code and "attachment_id" not in record
    assert await generated(conversation_id) == []


@pytest.mark.parametrize("call, words, code", [
    (ScriptedImageCall(error={"code": "moderation_blocked", "message": "Blocked by moderation."}), "Blocked by moderation",
     "image_refused"),
    (ScriptedImageCall(error={"code": "server_error", "message": "It broke."}), "It broke", "image_failed"),
    (ScriptedImageCall(b64="%%%"), "not valid base64", "image_rejected"),
])
async def test_a_failed_image_on_responses_is_recorded_and_the_reply_goes_on(scripted_provider, call, words, code):
    await images_on()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted_provider.script(ScriptedReply(images=[call], text="That one did not work."))
    events = await send(client, conversation_id, "Draw me a lighthouse.")

    errors = [d for name, d in events if name == "image" and d["status"] == "error"]
    assert len(errors) == 1 and words in errors[0]["detail"]
    reply = await the_reply(conversation_id)
    assert reply.status == MessageStatus.COMPLETE and reply.content == "That one did not work."
    (record,) = reply.metadata["generated_images"]
    assert words in record["error"]["detail"] and record["error"]["error"] == code
    assert await generated(conversation_id) == []


async def test_a_fork_carries_the_generated_image_in_its_own_store(scripted_provider):
    await images_on()
    client = AsyncClient()
    conversation_id = await new_chat(client)
    scripted_provider.script(*scripted_image_reply("responses"))
    await send(client, conversation_id, "Draw me a lighthouse.")
    (image,) = await generated(conversation_id)
    reply = await the_reply(conversation_id)

    response = await client.post(
        f"/api/conversations/{conversation_id}/fork/", {"message_id": str(reply.id)},
        content_type="application/json", headers={"Idempotency-Key": "fork-image"},
    )
    assert response.status_code == 201, response.content
    fork_id = response.json()["id"]
    *_, last = await messages_api(client, fork_id)
    assert [(a["id"], a["generated"]) for a in last["attachments"]] == [(str(image.id), True)]
    assert blob_of(fork_id, image).read_bytes() == tiny_png()
    assert blob_of(fork_id, image) != blob_of(conversation_id, image)


async def test_stop_ends_a_generate_image_call_still_waiting_on_the_provider(scripted_provider, settings):
    settings.ELION_API_SELECTOR = "chat.completions"
    await images_on()
    held = threading.Event()
    scripted_provider.script_images(ScriptedImage(hold=held))
    scripted_provider.script(*scripted_image_reply("chat.completions"))
    client = AsyncClient()
    conversation_id = await new_chat(client)
    sending = asyncio.ensure_future(send(client, conversation_id, "Draw me a lighthouse."))
    try:
        await wait_for(lambda: scripted_provider.requests_to(IMAGES_PATH))
        reply = await the_reply(conversation_id)
        response = await client.post(f"/api/conversations/{conversation_id}/messages/{reply.id}/stop/")
        assert response.status_code == 200, response.content
        assert (response.json()["status"], response.json()["metadata"]["error"]["error"]) == ("interrupted", "stopped")
        events = await sending
        assert events[-1] == ("done", {"message_id": str(reply.id), "status": "interrupted"})
        # The Images API call itself was cut short, not just no longer listened to.
        await wait_for(lambda: scripted_provider.abandoned_streams == 1)
    finally:
        held.set()
    assert await generated(conversation_id) == []
    # The call is stored without a result (every projection pairs it with the interrupted-call error).
    stopped = await the_reply(conversation_id)
    assert [(p["type"], p["name"]) for p in stopped.parts] == [("tool_call", "generate_image")]
    assert stopped.status == MessageStatus.INTERRUPTED
