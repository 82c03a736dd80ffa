"""Automatic keyword recall, the pure core's overlap check (seed "Layer 2 — Dynamic Context"): the text
already carried in the request indexed by word n-grams (`ContextText`), and `select_excerpts`, which ranks the hits (`continuity.rules.recall_policy`), cuts each to
about 300 characters around its first match, drops those that substantially overlap that text, and keeps at
most ten. Nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cached_property, lru_cache

from continuity.rules.recall_policy import (
    MAX_EXCERPTS,
    OVERLAP_NGRAM,
    OVERLAP_THRESHOLD,
    Excerpt,
    RecallHit,
    excerpt_around,
    rank_hits,
    words,
)


class ContextText:
    """Text already carried in the request, indexed for overlap checks.

    Built lazily, on the first check: most sends recall nothing, and the carried history is then never
    tokenised for this. `texts[0]` is the stored prompt, the rest the history the request can carry (a
    send's stretch of its branch: bounded by the input budget, so nothing is kept between sends).
    """

    def __init__(self, texts: Iterable[str], n: int = OVERLAP_NGRAM) -> None:
        self.n = n
        self._texts = list(texts)
        self._grams: set[tuple[str, ...]] | None = None
        self._parts: list[str] = []

    def _index(self) -> set[tuple[str, ...]]:
        if self._grams is None:
            self._grams, self._parts = _grams_and_parts(self._texts, self.n)
        return self._grams

    @cached_property
    def _joined(self) -> str:
        return _joined(self._parts)

    def overlap(self, text: str) -> float:
        """The share of `text`'s word n-grams found in the context (0.0 to 1.0)."""
        tokens = words(text)
        if not tokens:
            return 0.0
        grams = self._index()
        if len(tokens) < self.n:
            # A phrase shorter than an n-gram: found when its words (space-padded) lie within one text.
            return 1.0 if f" {' '.join(tokens)} " in self._joined else 0.0
        own = [tuple(tokens[i : i + self.n]) for i in range(len(tokens) - self.n + 1)]
        return sum(1 for gram in own if gram in grams) / len(own)


def _grams_and_parts(texts: Iterable[str], n: int) -> tuple[set[tuple[str, ...]], list[str]]:
    grams: set[tuple[str, ...]] = set()
    parts = []
    for text in texts:
        text_grams, part = _text_grams(text, n) if len(text) >= TEXT_GRAMS_KEPT_FROM else _grams_of(text, n)
        parts.append(part)
        grams |= text_grams
    return grams, parts


def _joined(parts: Sequence[str]) -> str:
    """Texts' words, each text's apart: a phrase padded with spaces is found in it only within one text
    (the separator holds a line break, which no phrase of words does)."""
    return " " + " \n ".join(parts) + " "


def _grams_of(text: str, n: int) -> tuple[frozenset[tuple[str, ...]], str]:
    """`text`'s word n-grams, and its words joined by spaces."""
    tokens = words(text)
    return frozenset(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)), " ".join(tokens)


# A long text is usually a stored prompt, the same on every send of its thread (and much the same in
# every thread): its n-grams are kept, by text, instead of being made on every send.
TEXT_GRAMS_KEPT_FROM = 2_000
_text_grams = lru_cache(maxsize=16)(_grams_of)


def select_excerpts(
    hits: Iterable[RecallHit],
    terms: Sequence[str],
    *,
    context: ContextText | None = None,
    limit: int = MAX_EXCERPTS,
    keep: Callable[[list[RecallHit]], set[str]] | None = None,
    batch: int = 2 * MAX_EXCERPTS,
) -> list[Excerpt]:
    """At most `limit` excerpts, best first, none substantially overlapping `context`.

    `keep`, when given, is asked about the ranked hits a batch at a time and
    answers the message ids that may be used (the database's live-branch
    check), so only as many hits are checked as the best ten need.
    """
    ranked = rank_hits(hits, terms)
    chosen: list[Excerpt] = []
    for start in range(0, len(ranked), batch):
        part = ranked[start : start + batch]
        allowed = keep(part) if keep is not None else None
        for hit in part:
            if allowed is not None and hit.message_id not in allowed:
                continue
            text = excerpt_around(hit.content, terms)
            if context is not None and context.overlap(text) >= OVERLAP_THRESHOLD:
                continue
            chosen.append(Excerpt(hit=hit, text=text))
            if len(chosen) >= limit:
                return chosen
    return chosen
