"""The `Idempotency-Key` a retry-safe action (Branch / Fresh Chat, fork, archive continuation) is named by."""

from __future__ import annotations

from elion.base.errors import InvalidInput

IDEMPOTENCY_KEY_MAX = 200


def idempotency_key_clean(key: object) -> str:
    if not isinstance(key, str) or not key.strip():
        raise InvalidInput(
            "Send an Idempotency-Key header so a retried branch cannot create a second conversation.",
            code="idempotency_key_required",
        )
    key = key.strip()
    if len(key) > IDEMPOTENCY_KEY_MAX:
        raise InvalidInput(
            f"An Idempotency-Key can be at most {IDEMPOTENCY_KEY_MAX} characters.", code="invalid_idempotency_key"
        )
    return key
