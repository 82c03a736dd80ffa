"""What the standalone benches share: Django set up on a fresh data dir, synthetic words."""

from __future__ import annotations

import os
import random
from pathlib import Path

SYLLABLES = ["ka", "lo", "mi", "ren", "sa", "tu", "vel", "or", "in", "da", "fe", "qua", "zi", "bo", "ny", "th"]


def setup_django(data_dir: Path, database_url: str | None) -> None:
    """Settings from a clean environment (SQLite in `data_dir`, or `database_url`), then migrate."""
    os.environ["ELION_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "elion.settings"
    os.environ["ELION_LOG_LEVEL"] = "WARNING"
    for name in ("DATABASE_URL", "ELION_TESTING", "DJANGO_DEBUG"):
        os.environ.pop(name, None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def synthetic_vocabulary(rng: random.Random, size: int) -> list[str]:
    """`size` distinct made-up words of 2–4 syllables, in a seed-determined order."""
    words: dict[str, None] = {}
    while len(words) < size:
        words.setdefault("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))), None)
    return list(words)


def zipf_weights(n: int) -> list[float]:
    return [1 / (rank + 1) for rank in range(n)]
