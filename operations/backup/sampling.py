"""A sample conversation's live branch, as a digest: written into a backup's manifest, read again after a restore.

The verification of a backup restores it into a scratch database and reads
the same conversation's live branch there (head to root through `parent`):
the digest of its messages (id, role, status, content, in order) must be the
one the backup recorded inside its own snapshot. The sample is the
conversation written last (most recently updated) that has a head.
"""

from __future__ import annotations

import hashlib
import json

from transcript.models import Conversation, Message


def live_branch_sample(conversation_id: object | None = None) -> dict | None:
    """`{"conversation", "messages", "sha256"}` of one conversation's live branch; None without any conversation."""
    conversations = Conversation._base_manager.exclude(head__isnull=True)
    if conversation_id is None:
        conversation = conversations.order_by("-updated_at", "pk").values("pk", "head_id").first()
    else:
        conversation = conversations.filter(pk=conversation_id).values("pk", "head_id").first()
    if conversation is None:
        return None
    rows = {
        row["id"]: row
        for row in Message._base_manager.filter(conversation_id=conversation["pk"]).values(
            "id", "parent_id", "role", "status", "content"
        )
    }
    branch, step, seen = [], conversation["head_id"], set()
    while step is not None and step in rows and step not in seen:
        seen.add(step)
        branch.append(rows[step])
        step = rows[step]["parent_id"]
    branch.reverse()
    digest = hashlib.sha256()
    for row in branch:
        digest.update(json.dumps([str(row["id"]), row["role"], row["status"], row["content"]]).encode())
        digest.update(b"\n")
    return {"conversation": str(conversation["pk"]), "messages": len(branch), "sha256": digest.hexdigest()}
