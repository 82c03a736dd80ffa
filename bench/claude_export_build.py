"""A synthetic Claude.ai export of a chosen size, written conversation by conversation (never held whole).

Each conversation has the documented shape (`uuid`, `name`, `created_at`,
`updated_at`, `account`, `current_leaf_message_uuid`, `chat_messages` with
`uuid`, `parent_message_uuid`, `sender`, `text`, `content` blocks), alternating
human and assistant turns of made-up words (the same vocabulary and turn sizes
as bench/chatgpt_export_build.py, so the two benches compare like with like),
a thinking block before each reply, and the last reply retried: two assistant
siblings under the last human message, the retry being the current leaf. Used
by bench/import.py and by the tests of bounded-memory Claude.ai imports.
"""

from __future__ import annotations

import json
import random
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.chatgpt_export_build import TURNS, WORDS_PER_TURN
from bench.common import synthetic_vocabulary

ROOT_PARENT = "00000000-0000-4000-8000-000000000000"
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def _at(seconds: float) -> str:
    return (_EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _message(uuid: str, parent: str, sender: str, at: str, text: str, thought: str | None) -> dict:
    content = ([{"type": "thinking", "thinking": thought}] if thought else []) + [{"type": "text", "text": text}]
    return {"uuid": uuid, "parent_message_uuid": parent, "sender": sender, "created_at": at, "updated_at": at,
            "text": text, "content": content, "attachments": [], "files": []}


def conversation(index: int, rng: random.Random, vocabulary: list[str]) -> dict:
    def words() -> str:
        return " ".join(rng.choices(vocabulary, k=WORDS_PER_TURN))

    t = index * 100.0
    messages = []
    parent = ROOT_PARENT
    for turn in range(TURNS):
        sender = "human" if turn % 2 == 0 else "assistant"
        uuid = f"{index:08x}-0000-4000-8000-{turn + 1:012x}"
        thought = f"thinking {index}.{turn}" if sender == "assistant" else None
        messages.append(_message(uuid, parent, sender, _at(t + turn), f"{index}.{turn} {words()}", thought))
        parent = uuid
    # The last reply retried: a sibling of it under the same human message, and the current leaf.
    retry = f"{index:08x}-0000-4000-8000-ffffffffffff"
    messages.append(_message(retry, messages[-2]["uuid"], "assistant", _at(t + TURNS), f"{index}.retry {words()}",
                             f"thinking {index}.retry"))
    return {"uuid": f"{index:08x}-c1a0-4000-8000-000000000000", "name": f"Synthetic conversation {index}",
            "created_at": _at(t), "updated_at": _at(t + TURNS), "account": {"uuid": "synthetic-account"},
            "current_leaf_message_uuid": retry, "chat_messages": messages}


def conversations(megabytes: float, seed: int = 7) -> Iterator[bytes]:
    """Encoded conversations whose JSON adds up to about `megabytes` MB."""
    rng = random.Random(seed)
    vocabulary = synthetic_vocabulary(rng, 4000)
    budget, index = int(megabytes * 1024**2), 0
    while budget > 0:
        data = json.dumps(conversation(index, rng, vocabulary), ensure_ascii=False).encode()
        budget -= len(data)
        index += 1
        yield data


def write_export_zip(path: Path, megabytes: float, seed: int = 7) -> dict:
    """The export zip as Claude.ai ships it (`conversations.json`, `users.json`, `projects.json`). Answers
    `{"conversations", "json_bytes", "zip_bytes"}`."""
    count = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        with archive.open("conversations.json", "w", force_zip64=True) as out:
            written = out.write(b"[")
            for data in conversations(megabytes, seed):
                written += out.write((b"," if count else b"") + data)
                count += 1
            written += out.write(b"]")
        archive.writestr("users.json", json.dumps([{"uuid": "synthetic-account", "full_name": "AUMA"}]))
        archive.writestr("projects.json", "[]")
    return {"conversations": count, "json_bytes": written, "zip_bytes": path.stat().st_size}
