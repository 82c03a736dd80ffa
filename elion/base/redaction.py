"""Keeping the provider key out of everything the app stores, returns or logs.

A provider's error message may quote the key, whole or in part, with or
without its `sk-` prefix. Any run of 8 or more characters of the configured
key is replaced, as is anything shaped like a key (`sk-…`, `key-…`, `rk-…`).
The same function serves provider errors (stored on the reply and returned)
and the log handler's filter.
"""

from __future__ import annotations

import logging
import re

from django.conf import settings

REDACTED = "[redacted]"
MIN_RUN = 8
_KEYLIKE = re.compile(r"\b(sk|key|rk)-[\w\-*.]+", re.IGNORECASE)


def redact_secret(text: str, secret: str | None) -> str:
    """`text` with every run of MIN_RUN+ characters of `secret`, and every key-shaped word, replaced."""
    if secret and len(secret) >= MIN_RUN:
        grams = {secret[i : i + MIN_RUN] for i in range(len(secret) - MIN_RUN + 1)}
        pieces: list[str] = []
        i = start = 0
        while i <= len(text) - MIN_RUN:
            if text[i : i + MIN_RUN] in grams:
                end = i + MIN_RUN
                while end < len(text) and text[i : end + 1] in secret:
                    end += 1
                pieces += [text[start:i], REDACTED]
                i = start = end
            else:
                i += 1
        text = "".join([*pieces, text[start:]])
    return _KEYLIKE.sub(REDACTED, text)


class KeyRedactingFilter(logging.Filter):
    """A log record's message with the configured provider key (any 8+ character run of it) removed."""

    def filter(self, record: logging.LogRecord) -> bool:
        key = getattr(settings, "OPENAI_API_KEY", None)
        if key:
            message = record.getMessage()
            cleaned = redact_secret(message, key)
            if cleaned != message:
                record.msg, record.args = cleaned, None
        return True
