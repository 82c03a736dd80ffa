"""The configured provider, and the gate that checks a conversation's binding.

Seed 004: the provider id, type, logical model and route fingerprint recorded on
a conversation's durable messages are compared with the configured provider
before any replay or provider I/O (send, repeated send, retry, compaction).
The whole tuple is compared, on every bound message, not just the latest:

* history with no recorded binding (legacy rows, binding fields empty) fails
  closed until the owner binds it deliberately
  (`manage.py bind_legacy_conversations --provider ID`);
* history bound to more than one tuple (mixed bindings) fails closed;
* a single recorded tuple that differs from the configured one fails closed
  and names the recorded provider id.

The API key is not part of the tuple, so rotating it alone keeps working. A
Branch / Fresh Chat starts a new conversation under the current provider
(its handoff bubble is stamped with the configured binding).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.db.models import Count, OuterRef, QuerySet, Subquery

from elion.base.errors import Conflict
from transcript.models import Conversation, Message, MessageKind, Role
from transcript.provider.gateway import ProviderBinding, ProviderConfig

CONTINUE_HINT = "Use Branch / Fresh Chat to continue this conversation's final exchange under the current provider."


def configured_provider() -> ProviderConfig:
    return ProviderConfig(
        provider_id=settings.ELION_PROVIDER_ID,
        api_selector=settings.ELION_API_SELECTOR,
        model=settings.ELION_MODEL,
        base_url=settings.OPENAI_BASE_URL,
        api_key=settings.OPENAI_API_KEY,
        deployment=settings.ELION_DEPLOYMENT,
        timeout_seconds=float(settings.ELION_PROVIDER_TIMEOUT_SECONDS),
    )


def _bound_messages() -> QuerySet[Message]:
    """Durable messages that carry a binding, newest first (walked down the (conversation, seq) index)."""
    return Message.objects.exclude(role=Role.SYSTEM).exclude(provider_id="").order_by("-seq")


def recorded_binding(conversation: Conversation) -> ProviderBinding | None:
    """The binding on the conversation's latest bound durable message, if any."""
    row = (
        _bound_messages()
        .filter(conversation=conversation)
        .values_list("provider_id", "provider_type", "model", "route_fingerprint")
        .first()
    )
    return ProviderBinding(*row) if row else None


def recorded_bindings_for(conversation_ids: list[UUID]) -> dict[UUID, ProviderBinding]:
    """`recorded_binding` of each of these conversations that has one, in two queries however many there
    are: each conversation's latest bound message is one probe down its (conversation, seq) index, then
    those messages' binding columns."""
    latest = _bound_messages().filter(conversation_id=OuterRef("pk")).values("pk")[:1]
    message_ids = [
        pk
        for pk in Conversation.all_objects.filter(pk__in=conversation_ids)
        .annotate(bound=Subquery(latest))
        .values_list("bound", flat=True)
        if pk is not None
    ]
    if not message_ids:
        return {}
    rows = Message.objects.filter(pk__in=message_ids).values_list(
        "conversation_id", "provider_id", "provider_type", "model", "route_fingerprint"
    )
    return {conversation_id: ProviderBinding(*binding) for conversation_id, *binding in rows}


def is_bound_record(message: Message) -> bool:
    """Does this durable message carry (or owe) a provider binding?

    Every transcript message does; the stored static prompt stands outside
    the transcript and is rebuilt from settings, never replayed as history.
    """
    return message.role != Role.SYSTEM


def has_full_binding(message: Message) -> bool:
    return bool(message.provider_id and message.provider_type and message.model and message.route_fingerprint)


def is_legacy_unbound(message: Message) -> bool:
    """A transcript row with no (complete) binding, from before bindings were recorded.

    A Branch / Fresh Chat handoff bubble written before bubbles were stamped
    is not counted: the app wrote it, no provider produced it, and it is never
    replayed as history (its text travels in the stored prompt's slot).
    """
    if message.kind == MessageKind.HANDOFF_ARTIFACT and not message.provider_id:
        return False
    return is_bound_record(message) and not has_full_binding(message)


def recorded_bindings(messages: Iterable[Message]) -> tuple[set[ProviderBinding], int]:
    """The distinct complete tuples recorded on `messages`, and how many rows have none.

    The rows are counted by what decides (role, kind and the four binding columns), and each
    distinct combination is then judged once: a thread of thousands of rows holds a handful.
    """
    return recorded_bindings_of_counts(Counter(m.binding_columns for m in messages))


def recorded_bindings_of_counts(
    combinations: Mapping[tuple[str, str, str, str, str, str], int],
) -> tuple[set[ProviderBinding], int]:
    """`recorded_bindings` of rows already counted by their `Message.binding_columns` (the tree cache keeps
    those counts for the slow path of `provider_binding_gate_probed`)."""
    bindings: set[ProviderBinding] = set()
    unbound = 0
    for (role, kind, *binding), count in combinations.items():
        example = Message(role=role, kind=kind, provider_id=binding[0], provider_type=binding[1],
                          model=binding[2], route_fingerprint=binding[3])
        if not is_bound_record(example):
            continue
        if is_legacy_unbound(example):
            unbound += count
        elif has_full_binding(example):
            bindings.add(ProviderBinding(*binding))
    return bindings, unbound


def recorded_bindings_counted(groups: Iterable[tuple[Message, int]]) -> tuple[set[ProviderBinding], int]:
    """`recorded_bindings` over rows grouped by their binding columns: each (row, how many such rows)."""
    bindings: set[ProviderBinding] = set()
    unbound = 0
    for message, count in groups:
        found, missing = recorded_bindings([message])
        bindings |= found
        unbound += missing * count
    return bindings, unbound


def binding_problem(messages: Iterable[Message], config: ProviderConfig | None = None) -> Conflict | None:
    """Why these rows may not be replayed to the configured provider, or None.

    A pure function of the loaded rows and the configuration.
    """
    return binding_problem_of(*recorded_bindings(messages), config)


def binding_problem_of(
    bindings: set[ProviderBinding], unbound: int, config: ProviderConfig | None = None
) -> Conflict | None:
    """`binding_problem` from the distinct recorded tuples and the count of rows with none."""
    config = config or configured_provider()
    if unbound:
        return Conflict(
            f"This conversation has {unbound} message(s) from before provider bindings were recorded, so it is "
            "not known which provider wrote them. Nothing was sent. Bind it deliberately with "
            f"`manage.py bind_legacy_conversations --provider {config.provider_id} --conversation <id>`. "
            + CONTINUE_HINT,
            code="provider_binding_missing",
        )
    if len(bindings) > 1:
        ids = ", ".join(sorted({f"'{b.provider_id}'" for b in bindings}))
        return Conflict(
            f"This conversation's history is bound to more than one provider route ({ids}), so it cannot be "
            "replayed to any single provider. Nothing was sent. " + CONTINUE_HINT,
            code="provider_binding_mixed",
        )
    if bindings:
        (recorded,) = bindings
        if recorded != config.binding():
            return Conflict(
                f"This conversation is bound to provider '{recorded.provider_id}' "
                f"(type {recorded.provider_type}, model {recorded.model}), which differs from the configured "
                f"provider '{config.provider_id}' (type {config.provider_type}, model {config.model}, or its "
                f"route). Nothing was sent. Select provider '{recorded.provider_id}' with its original route "
                "to continue here. " + CONTINUE_HINT,
                code="provider_mismatch",
            )
    return None


def provider_binding_gate(messages: Iterable[Message]) -> ProviderConfig:
    """The configured provider, if these rows (one conversation's) may be replayed to it; else 409.

    Callers run it before any replay or provider I/O, on rows read under the
    conversation's lock.
    """
    config = configured_provider()
    problem = binding_problem(messages, config)
    if problem is not None:
        raise problem
    return config


def provider_binding_gate_counted(combinations: Mapping[tuple[str, str, str, str, str, str], int]) -> ProviderConfig:
    """`provider_binding_gate` of rows already counted by their `Message.binding_columns`."""
    config = configured_provider()
    problem = binding_problem_of(*recorded_bindings_of_counts(combinations), config)
    if problem is not None:
        raise problem
    return config


def provider_binding_check(conversation: Conversation) -> ProviderConfig:
    """`provider_binding_gate` over every stored row of `conversation`."""
    return provider_binding_gate(Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM))


def binding_fields(config: ProviderConfig) -> dict[str, str]:
    """The four binding columns, to stamp on a new durable message."""
    binding = config.binding()
    return {
        "provider_id": binding.provider_id,
        "provider_type": binding.provider_type,
        "model": binding.model,
        "route_fingerprint": binding.route_fingerprint,
    }


def known_provider(provider_id: str) -> ProviderConfig:
    """The provider configuration for `provider_id`; only the configured provider is known."""
    config = configured_provider()
    if provider_id != config.provider_id:
        raise Conflict(
            f"Unknown provider '{provider_id}': the only configured provider is '{config.provider_id}' "
            "(ELION_PROVIDER_ID).",
            code="unknown_provider",
        )
    return config


def provider_binding_gate_probed(conversation: Conversation) -> ProviderConfig:
    """`provider_binding_gate` over every stored row of `conversation`, in one statement of two index probes
    when they agree (none for a conversation with no rows yet).

    The rows' binding columns are read in index order (`message_binding_ends`): the first and the
    last. When both are the configured provider's full tuple, every row between them is too, and the gate
    passes without reading the thread. Otherwise (a legacy, mixed or other route) the rows are counted by
    what decides, and judged as `provider_binding_gate_counted` judges them.
    """
    config = configured_provider()
    if conversation.last_seq == 0:
        return config
    ends = _binding_ends(conversation)
    if not ends or (ends[0] == ends[-1] and ProviderBinding(*ends[0]) == config.binding()):
        return config
    rows = Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM)
    columns = ("role", "kind", *BINDING_ONLY)
    counts = Counter({tuple(key): n for *key, n in rows.order_by().values_list(*columns).annotate(n=Count("id"))})
    return provider_binding_gate_counted(counts)


BINDING_ONLY = ("provider_id", "provider_type", "model", "route_fingerprint")


def _binding_ends(conversation: Conversation) -> list[tuple[str, str, str, str]]:
    """The least and the greatest binding tuple among the conversation's transcript rows (none: no rows)."""
    table = connection.ops.quote_name(Message._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in BINDING_ONLY)
    # The partial index's own predicate, word for word: SQLite uses a partial index only for a query whose
    # WHERE states its condition as written (`role <> 'system'` is not), and reads every row otherwise.
    where = f"conversation_id = %s AND NOT ({connection.ops.quote_name('role')} = '{Role.SYSTEM}')"
    ascending = ", ".join(connection.ops.quote_name(c) for c in BINDING_ONLY)
    descending = ", ".join(f"{connection.ops.quote_name(c)} DESC" for c in BINDING_ONLY)
    sql = (
        f"SELECT * FROM (SELECT {columns} FROM {table} WHERE {where} ORDER BY {ascending} LIMIT 1) AS least"
        f" UNION ALL"
        f" SELECT * FROM (SELECT {columns} FROM {table} WHERE {where} ORDER BY {descending} LIMIT 1) AS greatest"
    )
    pk = Message._meta.pk.get_db_prep_value(conversation.pk, connection)
    with connection.cursor() as cursor:
        cursor.execute(sql, [pk, pk])
        return [tuple(row) for row in cursor.fetchall()]
