"""The provider a voice request of one conversation may use: the configured one, if the conversation's
recorded binding matches it (seed 004; issue 43: "a drifted binding fails closed before any audio leaves
the machine"). The rows are counted by their binding columns in the database, so the check reads a
handful of groups, not the thread."""

from __future__ import annotations

from uuid import UUID

from django.db.models import Count

from transcript.models import Message, Role
from transcript.provider.binding import configured_provider, provider_binding_gate_counted
from transcript.provider.config import ProviderConfig

_BINDING_COLUMNS = ("role", "kind", "provider_id", "provider_type", "model", "route_fingerprint")


def voice_provider(conversation_id: UUID) -> ProviderConfig:
    """The configured provider, or the 409 the send would answer for this conversation's binding."""
    groups = (
        Message.objects.filter(conversation_id=conversation_id)
        .exclude(role=Role.SYSTEM)
        .values_list(*_BINDING_COLUMNS)
        .annotate(rows=Count("id"))
        .order_by()
    )
    return provider_binding_gate_counted({tuple(group[:6]): group[6] for group in groups})


def voice_provider_configured() -> ProviderConfig:
    """The configured provider, for voice outside any conversation (a voice preview in Settings)."""
    return configured_provider()
