"""A conversation's rows counted by what decides their provider binding, read by index hops.

`Message.binding_columns` (role, kind and the four binding columns) take a
handful of distinct values in a thread of any length: a user and an assistant
combination per provider the thread was held with. The index
`message_conversation_binding` (the conversation, then those six columns)
holds them in order, so each distinct combination is found by one seek to the
first index entry after the one before it (a "loose index scan"): a statement
per combination plus one that finds none, each reading one index entry,
however many rows share each combination. Only a combination whose rows are
counted by the binding gate (a legacy row with no binding:
`transcript.provider.binding.is_legacy_unbound`) is then counted, over that
combination's own index range; any other is reported with a count of 1, which
the gate never reads.

The answer is what the gate would make of grouping every row
(`recorded_bindings_of_counts`), with the statement count set by the thread's
combinations, not its length.
"""

from __future__ import annotations

from django.db import connection

from transcript.models import Conversation, Message, Role
from transcript.provider.binding import is_legacy_unbound

BINDING_INDEX_COLUMNS = ("role", "kind", "provider_id", "provider_type", "model", "route_fingerprint")


def _next_sql() -> str:
    """The first combination after the given one: one seek per column, each arm an index range
    (the columns before it equal, that one greater), the least of them. Parameters: per arm, the
    conversation, the equal columns, then the greater one (`_next_params`).

    One row-value comparison (`(role, …) > (…)`) would say the same, but SQLite seeks with its
    first column only and then reads every row of the combination it starts from."""
    table = connection.ops.quote_name(Message._meta.db_table)
    quoted = [connection.ops.quote_name(name) for name in BINDING_INDEX_COLUMNS]
    columns = ", ".join(quoted)
    conversation_column = connection.ops.quote_name("conversation_id")
    arms = []
    for place in range(len(quoted) - 1, -1, -1):
        equal = "".join(f" AND {column} = %s" for column in quoted[:place])
        arms.append(
            f"SELECT * FROM (SELECT {columns} FROM {table} WHERE {conversation_column} = %s{equal}"
            f" AND {quoted[place]} > %s ORDER BY {columns} LIMIT 1) arm{place}"
        )
    return f"SELECT * FROM ({' UNION ALL '.join(arms)}) arms ORDER BY {columns} LIMIT 1"


def _next_params(conversation_id: object, after: tuple) -> list:
    params = []
    for place in range(len(BINDING_INDEX_COLUMNS) - 1, -1, -1):
        params += [conversation_id, *after[: place + 1]]
    return params


def _first_sql() -> str:
    table = connection.ops.quote_name(Message._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(name) for name in BINDING_INDEX_COLUMNS)
    conversation_column = connection.ops.quote_name("conversation_id")
    return f"SELECT {columns} FROM {table} WHERE {conversation_column} = %s ORDER BY {columns} LIMIT 1"


def binding_combinations(conversation: Conversation) -> dict[tuple[str, str, str, str, str, str], int]:
    """The conversation's transcript rows (the stored prompt left out) by `Message.binding_columns`:
    each distinct combination with its row count where the binding gate reads it (legacy unbound rows),
    1 elsewhere."""
    conversation_id = Message._meta.get_field("conversation").get_db_prep_value(conversation.pk, connection)
    found: list[tuple[str, str, str, str, str, str]] = []
    with connection.cursor() as cursor:
        cursor.execute(_first_sql(), [conversation_id])
        row = cursor.fetchone()
        next_sql = _next_sql()
        while row is not None:
            found.append(tuple(row))
            cursor.execute(next_sql, _next_params(conversation_id, row))
            row = cursor.fetchone()
    combinations = {}
    for combination in found:
        if combination[0] == Role.SYSTEM:
            continue
        example = Message(**dict(zip(BINDING_INDEX_COLUMNS, combination, strict=True)))
        combinations[combination] = _rows_of(conversation, combination) if is_legacy_unbound(example) else 1
    return combinations


def _rows_of(conversation: Conversation, combination: tuple[str, ...]) -> int:
    return Message.objects.filter(
        conversation=conversation, **dict(zip(BINDING_INDEX_COLUMNS, combination, strict=True))
    ).count()
