"""Automatic keyword recall, the pure core's overlap check (seed "Layer 2 — Dynamic Context"): the text
already carried in the request, searched for word n-grams (`ContextText`), and `select_excerpts`, which
ranks the hits (`continuity.rules.recall_policy`), cuts each to about 300 characters around its first match,
drops those that substantially overlap that text, and keeps at most ten. Nothing here touches the database.
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
    """Text already carried in the request, for overlap checks.

    Read lazily, on the first check: most sends recall nothing, and the carried history is then never
    tokenised for this. `texts[0]` is the stored prompt, the rest the history the request can carry (a
    send's stretch of its branch: bounded by the input budget, so nothing is kept between sends).

    The context is never indexed whole: it is a window's worth of text (~190,000 tokens at the default
    budget), and a set of its every n-gram cost more than the rest of the send's composition. The n-grams
    of the excerpts being checked are looked up instead, all of a batch in one pass over the context's
    words (`grams_look_up`), and each answer is kept for the next check.
    """

    def __init__(self, texts: Iterable[str], n: int = OVERLAP_NGRAM) -> None:
        self.n = n
        self._texts = list(texts)
        self._words: list[str] | None = None
        self._looked_up: set[tuple[str, ...]] = set()
        self._found: set[tuple[str, ...]] = set()

    def _stream(self) -> list[str]:
        """The context's words, text after text, with `TEXT_BREAK` between two texts: no word holds one, so no
        n-gram of an excerpt matches across two texts."""
        if self._words is None:
            stream: list[str] = []
            for text in self._texts:
                stream.extend(_words_kept(text) if len(text) >= TEXT_WORDS_KEPT_FROM else words(text))
                stream.append(TEXT_BREAK)
            self._words = stream
        return self._words

    @cached_property
    def _joined(self) -> str:
        """The context's words joined by spaces, each text's apart: a phrase padded with spaces is found in it
        only within one text (the separator holds a line break, which no phrase of words does)."""
        return " " + " ".join(self._stream()) + " "

    def grams_look_up(self, texts: Iterable[str]) -> None:
        """Find which n-grams of `texts` occur in the context: those not looked up before, in one pass."""
        wanted = {gram for text in texts for gram in _ngrams(words(text), self.n)} - self._looked_up
        if not wanted:
            return
        stream = self._stream()
        # The context's n-grams are made and matched one at a time inside `zip` and `intersection`, never kept.
        self._found |= wanted.intersection(zip(*(stream[i:] for i in range(self.n)), strict=False))
        self._looked_up |= wanted

    def overlap(self, text: str) -> float:
        """The share of `text`'s word n-grams found in the context (0.0 to 1.0)."""
        tokens = words(text)
        if not tokens:
            return 0.0
        if len(tokens) < self.n:
            # A phrase shorter than an n-gram: found when its words (space-padded) lie within one text.
            return 1.0 if f" {' '.join(tokens)} " in self._joined else 0.0
        own = _ngrams(tokens, self.n)
        self.grams_look_up([text])
        return sum(1 for gram in own if gram in self._found) / len(own)


# Between two texts in the context's word stream (see `ContextText._stream`).
TEXT_BREAK = "\n"


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


# A long text is usually a stored prompt, the same on every send of its thread (and much the same in
# every thread): its words are kept, by text, instead of being found on every send.
TEXT_WORDS_KEPT_FROM = 2_000
_words_kept = lru_cache(maxsize=16)(lambda text: tuple(words(text)))


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
        cut = [(hit, excerpt_around(hit.content, terms)) for hit in part
               if allowed is None or hit.message_id in allowed]
        if context is not None:
            context.grams_look_up(text for _, text in cut)  # the batch's in one pass over the context
        for hit, text in cut:
            if context is not None and context.overlap(text) >= OVERLAP_THRESHOLD:
                continue
            chosen.append(Excerpt(hit=hit, text=text))
            if len(chosen) >= limit:
                return chosen
    return chosen
