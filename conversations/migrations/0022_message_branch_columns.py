"""Each message's place on its branch (depth, running token measure, born), written by every append.

The backfill walks each conversation's rows in seq order (a parent always has
a smaller seq), so each row's values come from its parent's, computed just
before. The token measure is frozen here as it was defined when this migration
was written (`transcript.branch_columns.stored_turn_tokens`).
"""

import math

from django.db import migrations, models
from django.db.models import Q

from elion.base.db.vendor_sql import vendor_statements

BATCH = 2_000
MESSAGE = "conversations_message"


def _own_tokens(role, content):
    if role not in ("user", "assistant"):
        return 0
    return math.ceil(len(content) / 4) if content else 0


def _qualifies(role, kind, status, content):
    return role == "assistant" and kind == "ordinary" and status == "complete" and bool(content.strip())


def backfill(apps, schema_editor):
    Message = apps.get_model("conversations", "Message")
    Conversation = apps.get_model("conversations", "Conversation")
    for conversation_id in Conversation.objects.values_list("id", flat=True).iterator():
        placed = {}  # id -> (depth, tokens, born, qualifies)
        changed = []
        rows = (
            Message.objects.filter(conversation_id=conversation_id).exclude(role="system")
            .order_by("seq").only("id", "parent_id", "role", "kind", "status", "content")
        )
        for row in rows.iterator(chunk_size=BATCH):
            parent = placed.get(row.parent_id) if row.parent_id else None
            own = _own_tokens(row.role, row.content)
            if parent is None:
                depth, tokens, born = 0, own, False
            else:
                depth, tokens, born = parent[0] + 1, parent[1] + own, parent[2] or parent[3]
            placed[row.id] = (depth, tokens, born, _qualifies(row.role, row.kind, row.status, row.content))
            row.branch_depth, row.branch_tokens, row.branch_born = depth, tokens, born
            changed.append(row)
            if len(changed) >= BATCH:
                Message.objects.bulk_update(changed, ["branch_depth", "branch_tokens", "branch_born"])
                changed = []
        if changed:
            Message.objects.bulk_update(changed, ["branch_depth", "branch_tokens", "branch_born"])


class Migration(migrations.Migration):
    dependencies = [("conversations", "0021_message_status_incomplete")]

    operations = [
        # Added in place with a constant default on both databases: Django would rebuild SQLite's message
        # table for a NOT NULL column, which drops the search index's triggers (migration 0004).
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField("message", "branch_depth", models.PositiveIntegerField(default=0)),
                migrations.AddField("message", "branch_tokens", models.BigIntegerField(default=0)),
                migrations.AddField("message", "branch_born", models.BooleanField(default=False)),
            ],
            database_operations=[
                migrations.RunSQL(f"ALTER TABLE {MESSAGE} ADD COLUMN {column}", migrations.RunSQL.noop)
                for column in (
                    "branch_depth integer NOT NULL DEFAULT 0",
                    "branch_tokens bigint NOT NULL DEFAULT 0",
                    "branch_born boolean NOT NULL DEFAULT false",
                )
            ],
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
        migrations.AddIndex(
            "message",
            models.Index(
                fields=["conversation", "provider_id", "provider_type", "model", "route_fingerprint"],
                condition=~Q(role="system"), name="message_binding_ends",
            ),
        ),
        # SQLite: a new index without statistics beside analyzed ones looks selective to the planner
        # (migration 0024 says more); analyze it at once.
        migrations.RunPython(vendor_statements({"sqlite": ["ANALYZE message_binding_ends"]}), migrations.RunPython.noop),
    ]
