"""Automatic keyword recall, the pure core's overlap check (seed "Layer 2 — Dynamic Context"): the text
already carried in the request indexed by word n-grams (`ContextText`, its older part kept between sends of a
long thread), and `select_excerpts`, which ranks the hits (`continuity.rules.recall_policy`), cuts each to
about 300 characters around its first match, drops those that substantially overlap that text, and keeps at
most ten. Nothing here touches the database.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
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

    Built lazily, on the first check: most sends recall nothing, and a long
    thread's history is then never tokenised for this. With `reuse_key` (the
    conversation), the index of the history's older part is kept between
    sends (`_CarriedPrefix`): the next send of a long thread indexes only its
    newest turns. `texts[0]` is the stored prompt, the rest the history.
    """

    def __init__(
        self, texts: Iterable[str], n: int = OVERLAP_NGRAM, *, reuse_key: object = None, lineage: object = None
    ) -> None:
        self.n = n
        self._texts = list(texts)
        self._reuse_key = reuse_key
        self._lineage = lineage
        self._grams: set[tuple[str, ...]] | None = None
        self._prefix: _CarriedPrefix | None = None
        self._parts: list[str] = []

    def _index(self) -> set[tuple[str, ...]]:
        if self._grams is None:
            texts = self._texts
            if self._reuse_key is not None:
                self._prefix = _carried_prefix(self._reuse_key, texts[1:], self.n, lineage=self._lineage)
                if self._prefix is not None:
                    texts = texts[:1] + texts[1 + len(self._prefix.texts):]
            self._grams, self._parts = _grams_and_parts(texts, self.n)
        return self._grams

    def index_warm(self) -> None:
        """Index the context now (the kept older part too), instead of on the first overlap check."""
        self._index()

    @cached_property
    def _joined(self) -> str:
        """The words of the texts indexed on this send (the kept older turns are the prefix's own)."""
        return _joined(self._parts)

    def _carries(self, gram: tuple[str, ...]) -> bool:
        return gram in self._grams or (self._prefix is not None and gram in self._prefix.grams)

    def _carries_phrase(self, phrase: str) -> bool:
        """Whether the context holds `phrase` (words, space-padded) within one of its texts."""
        return phrase in self._joined or (self._prefix is not None and self._prefix.carries_phrase(phrase))

    def overlap(self, text: str) -> float:
        """The share of `text`'s word n-grams found in the context (0.0 to 1.0)."""
        tokens = words(text)
        if not tokens:
            return 0.0
        self._index()
        if len(tokens) < self.n:
            return 1.0 if self._carries_phrase(f" {' '.join(tokens)} ") else 0.0
        own = [tuple(tokens[i : i + self.n]) for i in range(len(tokens) - self.n + 1)]
        return sum(1 for gram in own if self._carries(gram)) / len(own)


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


@dataclass(frozen=True)
class _CarriedPrefix:
    """The index of a long history's older turns, kept for the next send of the same conversation."""

    texts: list[str]  # the very strings indexed (the next history must begin with them, by identity)
    grams: frozenset[tuple[str, ...]]
    joined: str  # their words, each text's apart (`_joined`)
    # Histories of one lineage only ever grow at the end (`continuity.rules.kept_history.BranchHistory.lineage`):
    # a history of the same lineage begins with `texts` without comparing them.
    lineage: object = None
    # Phrases shorter than an n-gram already looked for in `joined`, and whether it holds them: the same
    # short candidates come back send after send, and each search reads the whole older history.
    phrases: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    def carries_phrase(self, phrase: str) -> bool:
        found = self.phrases.get(phrase)
        if found is None:
            if len(self.phrases) >= PHRASES_KEPT:
                self.phrases.clear()
            found = self.phrases[phrase] = phrase in self.joined
        return found


# The newest turns are indexed on each send (an edit, retry or rewind usually changes only them);
# histories shorter than PREFIX_MIN_TEXTS are indexed whole. A few long conversations are kept.
PREFIX_TAIL_TEXTS = 16
PREFIX_MIN_TEXTS = 200
PREFIXES_KEPT = 4
PHRASES_KEPT = 4_096
_PREFIXES: OrderedDict[object, _CarriedPrefix] = OrderedDict()
_PREFIXES_LOCK = threading.Lock()


def _carried_prefix(key: object, history: list[str], n: int, *, lineage: object = None) -> _CarriedPrefix | None:
    """An index of `history`'s older part, for `key`'s next send too: the kept one while `history` still
    begins with its very texts (extended when the history has grown well past it), else a new one; None
    for a short history. `lineage`: the history's, when it has one (then the same lineage is enough)."""
    with _PREFIXES_LOCK:
        kept = _PREFIXES.get(key)
    if kept is not None and len(kept.texts) <= len(history) and (
        (lineage is not None and kept.lineage == lineage)
        or all(a is b for a, b in zip(kept.texts, history, strict=False))
    ):
        if len(history) - len(kept.texts) <= 2 * PREFIX_TAIL_TEXTS:
            with _PREFIXES_LOCK:
                _PREFIXES.move_to_end(key)
            return kept
        more = history[len(kept.texts) : len(history) - PREFIX_TAIL_TEXTS]
        grams, parts = _grams_and_parts(more, n)
        prefix = _CarriedPrefix(kept.texts + more, kept.grams | grams, kept.joined + "\n" + _joined(parts), lineage)
    else:
        older = history[: len(history) - PREFIX_TAIL_TEXTS]
        if len(older) < PREFIX_MIN_TEXTS:
            return None
        grams, parts = _grams_and_parts(older, n)
        prefix = _CarriedPrefix(list(older), frozenset(grams), _joined(parts), lineage)
    with _PREFIXES_LOCK:
        _PREFIXES[key] = prefix
        _PREFIXES.move_to_end(key)
        while len(_PREFIXES) > PREFIXES_KEPT:
            _PREFIXES.popitem(last=False)
    return prefix


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
