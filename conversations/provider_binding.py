"""The configured provider, and the gate that checks a conversation's binding.

Seed 004: the provider id, type, logical model and route fingerprint recorded on
a conversation's durable messages are compared with the configured provider
before any replay or provider I/O. Drift fails closed and names the recorded
provider; the API key is not part of the comparison, so rotating it alone keeps
working.
"""

from __future__ import annotations

from django.conf import settings

from conversations.models import Conversation, Message, Role
from conversations.provider_gateway import ProviderBinding, ProviderConfig
from elion.errors import Conflict


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


def recorded_binding(conversation: Conversation) -> ProviderBinding | None:
    """The binding on the conversation's latest bound durable message, if any."""
    row = (
        Message.objects.filter(conversation=conversation)
        .exclude(role=Role.SYSTEM)
        .exclude(provider_id="")
        .order_by("-seq")
        .values_list("provider_id", "provider_type", "model", "route_fingerprint")
        .first()
    )
    return ProviderBinding(*row) if row else None


def binding_of_latest(messages) -> ProviderBinding | None:
    """The binding on the latest bound message among already-loaded rows."""
    bound = [m for m in messages if m.provider_id and m.role != Role.SYSTEM]
    if not bound:
        return None
    latest = max(bound, key=lambda m: m.seq)
    return ProviderBinding(latest.provider_id, latest.provider_type, latest.model, latest.route_fingerprint)


_QUERY = object()


def provider_binding_check(conversation: Conversation, recorded: ProviderBinding | None | object = _QUERY) -> ProviderConfig:
    """The configured provider, if the conversation may use it; else 409.

    `recorded` may be passed when the caller already loaded the rows.
    """
    config = configured_provider()
    if recorded is _QUERY:
        recorded = recorded_binding(conversation)
    if recorded is not None and recorded != config.binding():
        raise Conflict(
            f"This conversation is bound to provider '{recorded.provider_id}' "
            f"(type {recorded.provider_type}, model {recorded.model}), which differs from the configured "
            f"provider '{config.provider_id}' (model {config.model}). Select provider '{recorded.provider_id}' "
            "with its original route to continue, or start a Branch / Fresh Chat.",
            code="provider_mismatch",
        )
    return config


def history_binding_check(messages, *, action: str) -> ProviderConfig:
    """The configured provider, if every message of a history to be copied or
    replayed carries one complete binding equal to it; else 409.

    Seed 004: the complete tuple is validated before replay or fork
    publication; mixed bindings and unbound legacy history fail closed.
    Branch / Fresh Chat handoff bubbles are the app's own records, not
    provider output, and carry no binding.
    """
    from conversations.models import MessageKind

    config = configured_provider()
    recorded = {
        ProviderBinding(m.provider_id, m.provider_type, m.model, m.route_fingerprint)
        for m in messages
        if m.kind != MessageKind.HANDOFF_ARTIFACT
    }
    if any(not all(binding.__dict__.values()) for binding in recorded):
        raise Conflict(
            f"This conversation has messages with no provider binding (legacy history), so it cannot {action}. "
            "Run `manage.py bind_legacy_conversations --provider ID` with the provider that produced them first.",
            code="provider_unbound",
        )
    if len(recorded) > 1:
        raise Conflict(
            f"This conversation's messages are bound to more than one provider route, so it cannot {action}.",
            code="provider_mixed",
        )
    if recorded:
        provider_binding_check(None, next(iter(recorded)))
    return config


def binding_fields(config: ProviderConfig) -> dict[str, str]:
    """The four binding columns, to stamp on a new durable message."""
    binding = config.binding()
    return {
        "provider_id": binding.provider_id,
        "provider_type": binding.provider_type,
        "model": binding.model,
        "route_fingerprint": binding.route_fingerprint,
    }
