"""`manage.py restore PATH --replace` over a lived-in instance (issue 42): the current state is backed up and
verified first, then replaced; a SIGKILL at each step leaves the old state or the new one, never a mix."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys

import pytest
from django.core.management import call_command

from tests.operations.backup.conftest import ROOT
from tests.support.backup_files import backup_file
from tests.support.factories import thread
from transcript.attachments import store

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.timeout(900)]
ROOT_STEPS = ("checked", "safety backup", "blobs placed", "rows replaced", "old blobs removed")
STATE_SCRIPT = (
    "import json; from transcript.models import Conversation, Message; from operations.backup import members;"
    "print('STATE ' + json.dumps({'titles': sorted(Conversation.all_objects.values_list('title', flat=True)),"
    " 'messages': Message.objects.count(), 'blobs': sorted(sha for _, sha, _ in members.stored_blobs())}))"
)


def make_state(tmp_path, attachment_root, name: str, title: str, turns: int, blob: bytes):
    call_command("flush", interactive=False, verbosity=0)
    conversation = thread(*[("user" if i % 2 == 0 else "assistant", f"{title} {i}") for i in range(turns)], title=title)
    store.write_bytes(store.conversation_store(conversation.pk), blob, hashlib.sha256(blob).hexdigest())
    path = backup_file(tmp_path, name)
    for child in list(attachment_root.rglob("*")):
        if child.is_file():
            child.unlink()
    return path, {"titles": [title], "messages": turns, "blob": hashlib.sha256(blob).hexdigest()}


def state_of(instance) -> dict:
    out = instance.manage("shell", "-c", STATE_SCRIPT).stdout
    return json.loads(next(line[6:] for line in out.splitlines() if line.startswith("STATE ")))


def is_one_of(found: dict, *expected: dict) -> dict:
    for state in expected:
        if found["titles"] == state["titles"] and found["messages"] == state["messages"] and state["blob"] in found["blobs"]:
            return state
    raise AssertionError(f"a mix of states: {found}")


def replace_killed_at(instance, path, step: str | None) -> int:
    process = subprocess.Popen(
        [sys.executable, "manage.py", "restore", str(path), "--replace"], cwd=ROOT, env=instance.env,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    for line in process.stdout:
        if step is not None and line.strip() == f"step: {step}":
            process.send_signal(signal.SIGKILL)
            break
    process.wait(timeout=300)
    return process.returncode


def test_replace_backs_up_first_and_a_kill_at_each_step_leaves_old_or_new(tmp_path, attachment_root, fresh_instance):
    old_path, old = make_state(tmp_path, attachment_root, "old.zip", "Old harbour", 2, b"old blob " * 100)
    new_path, new = make_state(tmp_path, attachment_root, "new.zip", "New lighthouse", 6, b"new blob " * 100)
    assert fresh_instance.restore(old_path).returncode == 0
    assert is_one_of(state_of(fresh_instance), old) is old

    for step in ROOT_STEPS:
        code = replace_killed_at(fresh_instance, new_path, step)
        assert code == -signal.SIGKILL, step
        found = is_one_of(state_of(fresh_instance), old, new)
        if step in ("checked", "safety backup", "blobs placed"):
            assert found is old, step  # killed before the transaction: nothing replaced
        if step == "old blobs removed":
            assert found is new, step  # killed after the commit: the new state, old blobs left to collection
        if found is new:  # back to the old state for the next step
            assert replace_killed_at(fresh_instance, old_path, None) == 0
            assert is_one_of(state_of(fresh_instance), old) is old

    # Unkilled: the new state, exactly, and a verified backup of the old one kept.
    result = fresh_instance.manage("restore", str(new_path), "--replace")
    assert "was backed up and verified" in result.stdout
    found = state_of(fresh_instance)
    assert is_one_of(found, new) is new and found["blobs"] == [new["blob"]], "the old blob is removed"
    safety = sorted((fresh_instance.data_dir / "before-restore").glob("*.zip"))
    assert safety, "the state before the restore was kept"
