"""What a backup holds and how its zip is laid out (README "Backup and restore").

    models/<app_label>.<model_name>.jsonl   one line per row, every concrete field by name
    blobs/uploads/<sha256>                   an uploaded attachment not yet sent
    blobs/conversations/<id>/<sha256>        a blob of one conversation's store
    blobs/archive/<sha256>                   an image of an imported conversation (the archive's store)
    manifest.json                            format, schema, counts, sha256 and size of every member
    manifest.sha256                          the sha256 of manifest.json

The rows are chosen generically: every concrete model of the apps in `APPS`,
so a model or a column added later is carried without touching this module.
Only rows that describe this instance (`INSTANCE_MODELS`) or this disk
(`NOT_BACKED_UP`) are left out, each with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from django.apps import apps
from django.db.models import Model

from archive.services.blobs import archive_store
from transcript.attachments import store

FORMAT = "elion-backup"
VERSION = 1
APPS = ("transcript", "conversations", "continuity", "memories", "archive", "artifacts", "check_ins", "elion")
# Rows that moved app in issue 45 (same tables): the transcript's, from conversations to `transcript`, and the
# owner's settings rows (the assistant's settings, the characters, the audio usage), from conversations to
# `elion`. A backup made before names them `conversations.<model>`, and a restore reads them under their label
# now (`label_now`).
MOVED_TO_TRANSCRIPT = (
    "attachment", "attachmentblobidentity", "conversation", "conversationdeletion", "folder", "idempotentaction",
    "message", "messageattachment", "messagesearchentry", "messagespeech",
)
MOVED_TO_ELION = ("assistantsettings", "audiousage", "character")
LABELS_BEFORE_ISSUE_45 = {
    **{f"conversations.{name}": f"transcript.{name}" for name in MOVED_TO_TRANSCRIPT},
    **{f"conversations.{name}": f"elion.{name}" for name in MOVED_TO_ELION},
}
# The project's rows a backup leaves out, each with its reason: they describe this instance, not the owner's
# life, so a restore neither replaces nor removes them (it records itself in one of them). Every other model
# of `APPS` is backed up (tests/operations/backup/test_members.py: every app of the project is in `APPS`).
INSTANCE_MODELS = {
    "elion.loginfailure": "failed owner logins on this server (the login throttle's windows)",
    "elion.backuprecord": "the record of each backup made here, and what its verification found",
    "elion.restorerun": "the record of each restore run here, the one running included",
    "elion.pushsubscription": "this server's browsers subscribed to Web Push: each holds keys for this VAPID key",
}
# label -> why the database or the app rebuilds it instead.
NOT_BACKED_UP = {
    "transcript.attachmentblobidentity": "the inode and timestamps of a blob on this disk: meaningless on "
    "another one; the first verification after a restore hashes the blob and records it again.",
}
# Rows a fresh instance creates on first use; a restore replaces them instead of refusing.
SINGLETONS = frozenset({"elion.assistantsettings", "memories.memorysetlock"})
# Rows the database's triggers make while other rows are inserted (Past Conversation Search's index
# rows, one per searchable message): a restore replaces them with the backed-up ones, so their ids,
# and with them the order of search results, stay the same.
TRIGGER_MADE = frozenset({"transcript.messagesearchentry"})
MANIFEST = "manifest.json"
MANIFEST_DIGEST = "manifest.sha256"
MODELS_PREFIX = "models/"
BLOBS_PREFIX = "blobs/"
_SHA = r"[0-9a-f]{64}"
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UPLOAD_BLOB = re.compile(rf"^blobs/uploads/({_SHA})$")
_CONVERSATION_BLOB = re.compile(rf"^blobs/conversations/({_UUID})/({_SHA})$")
_ARCHIVE_BLOB = re.compile(rf"^blobs/archive/({_SHA})$")


def model_label(model: type[Model]) -> str:
    return model._meta.label_lower


def label_now(label: str) -> str:
    """A backup's model label as this version names the model: an older backup's `conversations.<model>`
    of a row in `MOVED_TO_TRANSCRIPT` is `transcript.<model>`, of one in `MOVED_TO_ELION` `elion.<model>`."""
    return LABELS_BEFORE_ISSUE_45.get(label, label)


def model_member(model: type[Model]) -> str:
    return f"{MODELS_PREFIX}{model_label(model)}.jsonl"


def _candidate_models() -> list[type[Model]]:
    found = []
    for label in APPS:
        for model in apps.get_app_config(label).get_models():
            if model._meta.proxy or not model._meta.managed or model_label(model) in INSTANCE_MODELS:
                continue
            found.append(model)
    return found


def all_app_models() -> list[type[Model]]:
    """Every concrete model of the backed-up apps, derived ones included (what "empty" is checked on)."""
    return _candidate_models()


def backed_up_models() -> list[type[Model]]:
    """The models a backup holds, each after every model its foreign keys point to (restore order).

    A self reference and a key without a database constraint (a conversation's
    `head`) impose no order; the remaining graph has no cycle.
    """
    chosen = [model for model in _candidate_models() if model_label(model) not in NOT_BACKED_UP]
    depends = {
        model: {
            field.related_model
            for field in model._meta.concrete_fields
            if field.is_relation
            and field.related_model in chosen
            and field.related_model is not model
            and getattr(field, "db_constraint", True)
        }
        for model in chosen
    }
    ordered: list[type[Model]] = []
    while len(ordered) < len(chosen):
        ready = [m for m in chosen if m not in ordered and depends[m] <= set(ordered)]
        if not ready:
            raise RuntimeError("The backed-up models' foreign keys form a cycle.")
        ordered.extend(ready)
    return ordered


def blob_member_for_upload(sha256: str) -> str:
    return f"{BLOBS_PREFIX}uploads/{sha256}"


def blob_member_for_conversation(conversation_id: object, sha256: str) -> str:
    return f"{BLOBS_PREFIX}conversations/{conversation_id}/{sha256}"


def blob_member_for_archive(sha256: str) -> str:
    return f"{BLOBS_PREFIX}archive/{sha256}"


def stored_blobs() -> Iterator[tuple[str, str, Path]]:
    """(member name, sha256, path) of every blob in the upload store, every conversation store and the
    archive's store (images of imported conversations)."""
    for sha256, path in sorted(store.blobs_in(store.upload_store())):
        yield blob_member_for_upload(sha256), sha256, path
    for sha256, path in sorted(store.blobs_in(archive_store())):
        yield blob_member_for_archive(sha256), sha256, path
    for conversation_id, directory in sorted(store.conversation_stores()):
        for sha256, path in sorted(store.blobs_in(directory)):
            yield blob_member_for_conversation(conversation_id, sha256), sha256, path


def blob_target(member: str) -> tuple[Path, str] | None:
    """(store directory, sha256) a blob member goes back to; None for a name that is no blob member."""
    if match := _UPLOAD_BLOB.match(member):
        return store.upload_store(), match.group(1)
    if match := _CONVERSATION_BLOB.match(member):
        return store.conversation_store(match.group(1)), match.group(2)
    if match := _ARCHIVE_BLOB.match(member):
        return archive_store(), match.group(1)
    return None


def data_dir_has_blobs() -> bool:
    return any(True for _ in stored_blobs())
