"""A ChatGPT data export written from its documented shape, with the quirks real exports have.

Each conversation is `{title, create_time, update_time, conversation_id,
current_node, mapping}`; `mapping` holds nodes `{id, message, parent,
children}`; a message has `author.role`, `content` (`content_type` text,
multimodal_text or user_editable_context, `parts`), `metadata`, `status`,
`recipient` and a float `create_time` (or null).

The quirks: a hidden system root, custom instructions as hidden context (the
newer `user_editable_context` node and the older `is_user_system_message`
one), a regeneration whose current branch is not the first child, an edited
question, a browser round and an image-generation round (tool nodes, one
image missing from the zip), an uploaded photo (`file-service://`), an
in_progress reply, null times, and one corrupted conversation.
"""

from __future__ import annotations

import json

PIER_ID = "file-Hb7Q1wZ9"
DUSK_ID = "file_00000000d4e1a2b3"
LOST_ID = "file_00000000ffff0000"  # named by a tool node, absent from the zip
BOAT_ID = "file-Bt4Kq2"  # shown on a branch the owner left

PIER_JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"pier at dusk " * 20
DUSK_WEBP = b"RIFF\x40\x00\x00\x00WEBPVP8 " + b"generated dusk " * 20
BOAT_PNG = b"\x89PNG\r\n\x1a\n" + b"a small boat " * 20
DECOY_PNG = b"\x89PNG\r\n\x1a\n" + b"another file whose id only starts the same " * 4

PROFILE = "Preferred name: AUMA. I live by the sea and keep a lantern."
INSTRUCTIONS = "Answer warmly and briefly; call me AUMA."
OLD_ABOUT_ME = "I write morning pages."
OLD_ABOUT_MODEL = "Be gentle."


def message(node_id, role, parts, *, at, content_type="text", name=None, status="finished_successfully",
            recipient="all", metadata=None, **content):
    return {
        "id": node_id,
        "author": {"role": role, "name": name, "metadata": {}},
        "create_time": at,
        "update_time": None,
        "content": {"content_type": content_type, **({"parts": parts} if parts is not None else {}), **content},
        "status": status,
        "end_turn": role == "assistant" or None,
        "weight": 1.0,
        "metadata": metadata or {},
        "recipient": recipient,
        "channel": None,
    }


def image_part(pointer, size=1234):
    return {"content_type": "image_asset_pointer", "asset_pointer": pointer, "size_bytes": size,
            "width": 512, "height": 512, "fovea": None, "metadata": None}


def tree(*links):
    """`mapping` from `(node id, parent id, message)` triples, children in the order given."""
    mapping = {}
    for node_id, parent, body in links:
        mapping[node_id] = {"id": node_id, "message": body, "parent": parent, "children": []}
        if parent is not None:
            mapping[parent]["children"].append(node_id)
    return mapping


def harbour():
    """Branches, hidden context, tools, images, an in_progress reply."""
    t = 1717250000.0
    mapping = tree(
        ("root", None, None),
        ("sys", "root", message("sys", "system", [""], at=None,
                                metadata={"is_visually_hidden_from_conversation": True})),
        ("ctx", "sys", message("ctx", "user", None, at=None, content_type="user_editable_context",
                               user_profile=PROFILE, user_instructions=INSTRUCTIONS,
                               metadata={"is_visually_hidden_from_conversation": True,
                                         "user_context_message_data": None})),
        ("u1", "ctx", message("u1", "user", ["Shall we walk to the harbour?"], at=t + 10)),
        # The first reply, then a regeneration: the owner last saw the second.
        ("a1", "u1", message("a1", "assistant", ["FIRSTREPLY the harbour is far tonight."], at=t + 20)),
        ("a1r", "u1", message("a1r", "assistant", ["The harbour is close; we walk at dusk."], at=t + 30)),
        # The branch left behind goes on: a follow-up there, with a picture.
        ("u2x", "a1", message("u2x", "user", [image_part(f"file-service://{BOAT_ID}"), "ALTERNATE boats in the bay?"],
                              at=t + 25, content_type="multimodal_text")),
        ("a2x", "u2x", message("a2x", "assistant", ["ALTERNATE the boats sail at noon."], at=t + 26)),
        # The current branch: a photo, a browser round, an image the model drew.
        ("u2", "a1r", message("u2", "user", [image_part(f"file-service://{PIER_ID}"), "Here is the pier."],
                              at=t + 40, content_type="multimodal_text")),
        ("a2", "u2", message("a2", "assistant", ['search("harbour tide tables")'], at=t + 50, recipient="browser",
                             content_type="code", language="unknown", text='search("harbour tide tables")')),
        ("b2", "a2", message("b2", "tool", ["TIDE RESULTS: high water 19:40"], at=t + 51, name="browser",
                             content_type="tether_browsing_display", result="TIDE RESULTS")),
        ("a3", "b2", message("a3", "assistant", ['{"prompt": "the pier at dusk"}'], at=t + 60,
                             recipient="dalle.text2im")),
        ("d3", "a3", message("d3", "tool", [image_part(f"sediment://{DUSK_ID}"), image_part(f"sediment://{LOST_ID}")],
                             at=t + 70, name="dalle.text2im", content_type="multimodal_text",
                             metadata={"message_type": None})),
        ("a4", "d3", message("a4", "assistant", ["High water is at 19:40; I drew the pier at dusk for you."],
                             at=t + 80)),
        # An edited question: the first wording stays on its own branch.
        ("u5x", "a4", message("u5x", "user", ["ALTERNATE what colour was the sky?"], at=t + 90)),
        ("u5", "a4", message("u5", "user", ["What colour is the water there?"], at=t + 95)),
        # The reply was still streaming when the export was made.
        ("a5", "u5", message("a5", "assistant", [""], at=t + 100, status="in_progress")),
    )
    return {
        "title": "Harbour at dusk", "create_time": t, "update_time": t + 100,
        "conversation_id": "7a1c0e52-0000-4000-8000-00000000a001", "id": "7a1c0e52-0000-4000-8000-00000000a001",
        "current_node": "a5", "is_archived": False, "default_model_slug": "gpt-4o", "safe_urls": [],
        "moderation_results": [], "mapping": mapping,
    }


def morning():
    """Older custom instructions (`is_user_system_message`), null times everywhere."""
    mapping = tree(
        ("r", None, None),
        ("ui", "r", message("ui", "user", [f"{OLD_ABOUT_ME}\n{OLD_ABOUT_MODEL}"], at=None,
                            metadata={"is_user_system_message": True, "user_context_message_data": {
                                "about_user_message": OLD_ABOUT_ME, "about_model_message": OLD_ABOUT_MODEL}})),
        ("m1", "ui", message("m1", "user", ["Good morning, shall I read you my pages?"], at=None)),
        ("m2", "m1", message("m2", "assistant", ["Good morning. Yes, read them slowly."], at=None)),
    )
    return {"title": "Morning pages", "create_time": None, "update_time": None,
            "conversation_id": "7a1c0e52-0000-4000-8000-00000000a002", "current_node": "m2", "mapping": mapping}


def broken():
    """What real exports sometimes hold: an entry without a usable mapping."""
    return {"title": "Broken tide", "create_time": 1717000000.0, "conversation_id": "broken-1", "mapping": None}


def conversations():
    return [harbour(), broken(), morning()]


def as_json(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=1).encode()


def images():
    return {
        f"{PIER_ID}-pier.jpeg": PIER_JPEG,
        f"dalle-generations/{DUSK_ID}-7c1e9b.webp": DUSK_WEBP,
        f"user-AbC123/{BOAT_ID}-boat.png": BOAT_PNG,
        f"{PIER_ID}X-other.png": DECOY_PNG,  # an id that merely starts with the pier's
    }


def split_members(with_index: bool):
    items = conversations()
    members = {"conversations-000.json": as_json(items[:1]), "conversations-001.json": as_json(items[1:])}
    if with_index:
        members["conversations.json.index"] = as_json({"files": list(members)})
        members["export_manifest.json"] = as_json({"version": 2, "files": list(members)})
    return members
