"""A synthetic ChatGPT export of a chosen size, written conversation by conversation (never held whole).

Each conversation has the documented shape (`mapping` of nodes, `current_node`)
with a hidden system root, alternating user and assistant turns of made-up
words (so deflate compresses it like real text, about 3:1), and a regenerated
reply on a branch the owner left. Used by bench/import.py and by the tests of
bounded-memory and background imports.
"""

from __future__ import annotations

import json
import random
import zipfile
from collections.abc import Iterator
from pathlib import Path

from bench.common import synthetic_vocabulary

TURNS = 16
WORDS_PER_TURN = 70


def conversation(index: int, rng: random.Random, vocabulary: list[str]) -> dict:
    def words() -> str:
        return " ".join(rng.choices(vocabulary, k=WORDS_PER_TURN))

    t = 1_700_000_000.0 + index * 100
    mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    for turn in range(TURNS):
        node = f"n{turn}"
        role = "user" if turn % 2 == 0 else "assistant"
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": role, "name": None, "metadata": {}}, "create_time": t + turn,
            "content": {"content_type": "text", "parts": [f"{index}.{turn} {words()}"]},
            "status": "finished_successfully", "recipient": "all", "metadata": {},
        }}
        mapping[parent]["children"].append(node)
        parent = node
    # A regeneration of the last reply, left behind.
    mapping["alt"] = {"id": "alt", "parent": f"n{TURNS - 2}", "children": [], "message": {
        "id": "alt", "author": {"role": "assistant"}, "create_time": t + TURNS,
        "content": {"content_type": "text", "parts": [f"{index}.alt {words()}"]}, "recipient": "all",
    }}
    mapping[f"n{TURNS - 2}"]["children"].insert(0, "alt")
    return {"title": f"Synthetic conversation {index}", "create_time": t, "update_time": t + TURNS,
            "conversation_id": f"synthetic-{index:08d}", "current_node": parent, "mapping": mapping}


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


def write_export_zip(path: Path, megabytes: float, members: int = 1, seed: int = 7) -> dict:
    """The export zip: one `conversations.json`, or `members` split `conversations-NNN.json` members
    (the same conversations either way, in the same order). Answers `{"conversations", "json_bytes",
    "zip_bytes"}`."""
    names = ["conversations.json"] if members == 1 else [f"conversations-{n:03d}.json" for n in range(members)]
    per_member = megabytes * 1024**2 / members
    items = conversations(megabytes, seed)
    count = json_bytes = 0
    pending: bytes | None = next(items, None)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for number, name in enumerate(names):
            with archive.open(name, "w", force_zip64=True) as out:
                written = out.write(b"[")
                first = True
                # Each member takes conversations up to its share; the last one takes the rest.
                while pending is not None and (written < per_member or number == len(names) - 1):
                    written += out.write((b"" if first else b",") + pending)
                    first, count = False, count + 1
                    pending = next(items, None)
                written += out.write(b"]")
            json_bytes += written
        if members > 1:
            archive.writestr("export_manifest.json", json.dumps({"files": names}))
    return {"conversations": count, "json_bytes": json_bytes, "zip_bytes": path.stat().st_size}


def write_export_json(path: Path, megabytes: float, seed: int = 7) -> dict:
    """The export as one plain `conversations.json` file."""
    count = 0
    with path.open("wb") as out:
        out.write(b"[")
        for data in conversations(megabytes, seed):
            out.write((b"," if count else b"") + data)
            count += 1
        out.write(b"]")
        size = out.tell()
    return {"conversations": count, "json_bytes": size}
