"""Binding legacy history to a provider, deliberately (seed 004).

Rows written before bindings were recorded carry empty binding fields; the
binding gate (`transcript.provider.binding`) refuses to replay them. The
owner binds them with `manage.py bind_legacy_conversations --provider ID`:
the named provider must be the configured one, and a conversation whose
bound rows name another tuple is refused rather than mixed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from transcript.models import Conversation, Message, MessageKind, Role
from transcript.provider.binding import binding_fields, is_legacy_unbound, known_provider, recorded_bindings


@dataclass
class LegacyBindingReport:
    bound: dict[str, int] = field(default_factory=dict)  # conversation id -> rows bound
    refused: dict[str, str] = field(default_factory=dict)  # conversation id -> reason


def legacy_conversation_ids() -> list[UUID]:
    """Conversations holding at least one transcript row with an empty binding field."""
    empty = Q(provider_id="") | Q(provider_type="") | Q(model="") | Q(route_fingerprint="")
    # Unbound handoff bubbles are not legacy history (`provider_binding.is_legacy_unbound`).
    unbound = Message.objects.exclude(role=Role.SYSTEM).filter(empty).exclude(
        kind=MessageKind.HANDOFF_ARTIFACT, provider_id=""
    )
    return sorted(set(unbound.values_list("conversation_id", flat=True)), key=str)


def legacy_conversations_bind(
    *, provider_id: str, conversation_ids: list[UUID] | None = None, dry_run: bool = False
) -> LegacyBindingReport:
    """Stamp the configured provider's full tuple on unbound rows.

    Raises `Conflict` (`unknown_provider`) for a provider id that is not configured.
    Each conversation is bound in its own transaction under its row lock, so a
    concurrent send either sees all of its rows bound or none.
    """
    config = known_provider(provider_id)
    fields = binding_fields(config)
    target = config.binding()
    report = LegacyBindingReport()
    ids = conversation_ids if conversation_ids is not None else legacy_conversation_ids()
    for conversation_id in ids:
        with transaction.atomic():
            conversation = Conversation.objects.select_for_update().filter(pk=conversation_id).first()
            if conversation is None:
                report.refused[str(conversation_id)] = "no such conversation"
                continue
            rows = list(Message.objects.filter(conversation=conversation).exclude(role=Role.SYSTEM))
            bindings, unbound = recorded_bindings(rows)
            if not unbound:
                report.refused[str(conversation_id)] = "nothing to bind (no unbound rows)"
                continue
            other = {b for b in bindings if b != target}
            if other:
                names = ", ".join(sorted({f"'{b.provider_id}'" for b in other}))
                report.refused[str(conversation_id)] = (
                    f"already has rows bound to another route ({names}); binding the rest to "
                    f"'{provider_id}' would mix bindings"
                )
                continue
            report.bound[str(conversation_id)] = unbound
            if not dry_run:
                ids_to_bind = [m.pk for m in rows if is_legacy_unbound(m)]
                Message.objects.filter(pk__in=ids_to_bind).update(**fields, updated_at=timezone.now())
    return report
