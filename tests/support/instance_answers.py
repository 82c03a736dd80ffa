"""Everything an instance answers, gathered through its API (and its rows), to compare two instances.

Used by the backup round trip twice: in the test process for the instance
that was backed up, and in a `manage.py shell` subprocess for the one it was
restored into (`python manage.py shell -c "...instance_answers_dump(PATH)"`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.db import transaction
from django.test import Client

SEARCH_WORDS = ("lighthouse", "harbour", "marigold", "ferry", "notes")


def _get(client: Client, path: str) -> object:
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code, response.content[:300])
    body = b"".join(response.streaming_content) if response.streaming else response.content  # exports stream
    if response["Content-Type"].startswith("application/json"):
        return json.loads(body)
    if response["Content-Type"].startswith("text/"):
        return body.decode()
    return {"content_type": response["Content-Type"], "sha256": hashlib.sha256(body).hexdigest(), "size": len(body)}


def stored_prompts() -> dict[str, str]:
    from transcript.models import Message, Role

    return {
        str(m.conversation_id): m.content for m in Message.objects.filter(role=Role.SYSTEM).order_by("conversation_id")
    }


def every_row() -> dict[str, str]:
    """Each backed-up model's rows, serialized as a backup serializes them (every concrete field)."""
    from operations.backup.members import backed_up_models, model_label
    from operations.backup.writing import rows_jsonl

    return {model_label(m): rows_jsonl(m._base_manager.order_by("pk")).decode() for m in backed_up_models()}


def instance_answers() -> dict:
    from archive.models import ArchiveDocument, LibraryFile
    from continuity.rules.prompt_store import static_prompts_rebuild
    from memories.models import Memory
    from transcript.models import Conversation

    client = Client(HTTP_HOST="localhost")
    answers: dict[str, object] = {"rows": every_row(), "stored_prompts": stored_prompts()}
    api: dict[str, object] = {}
    for path in (
        "/api/settings/", "/api/folders/", "/api/characters/", "/api/memories/", "/api/conversations/?trashed=all",
        "/api/archive/documents/", "/api/library/files/", "/api/usage/", "/api/artifacts/",
    ):
        api[path] = _get(client, path)
    for conversation_id in Conversation.all_objects.order_by("id").values_list("id", flat=True):
        base = f"/api/conversations/{conversation_id}/"
        for suffix in ("", "messages/", "export/?format=json", "export/?format=markdown", "compaction/"):
            api[base + suffix] = _get(client, base + suffix)
        for message in api[base + "messages/"]["results"]:
            for attachment in message["attachments"]:
                path = f"{base}attachments/{attachment['id']}/"
                api[path] = _get(client, path)
    for memory_id in Memory.objects.order_by("id").values_list("id", flat=True):
        api[f"/api/memories/{memory_id}/"] = _get(client, f"/api/memories/{memory_id}/")
        api[f"/api/memories/{memory_id}/impact/"] = _get(client, f"/api/memories/{memory_id}/impact/")
    for document_id in ArchiveDocument.objects.order_by("id").values_list("id", flat=True):
        document = api[f"/api/archive/documents/{document_id}/"] = _get(client, f"/api/archive/documents/{document_id}/")
        for image in document.get("attachments", []):
            path = f"/api/archive/documents/{document_id}/attachments/{image['sha256']}/"
            api[path] = _get(client, path)
    for artifact in api["/api/artifacts/"]["results"]:
        api[f"/api/artifacts/{artifact['id']}/"] = _get(client, f"/api/artifacts/{artifact['id']}/")
    for file_id in LibraryFile.objects.order_by("id").values_list("id", flat=True):
        api[f"/api/library/files/{file_id}/"] = _get(client, f"/api/library/files/{file_id}/")
    for word in SEARCH_WORDS:
        for path in (f"/api/search/?q={word}", f"/api/search/?q={word}&include_shielded=true", f"/api/archive/search/?q={word}"):
            api[path] = _get(client, path)
    answers["api"] = api
    with transaction.atomic():
        static_prompts_rebuild(Conversation.objects.all())
    answers["rebuilt_prompts"] = stored_prompts()
    return json.loads(json.dumps(answers))


def instance_answers_dump(path: str) -> None:
    Path(path).write_text(json.dumps(instance_answers()))
