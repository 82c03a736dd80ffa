"""Properties of keyword recall's ranking, excerpt selection, excerpting and rendering (pure, no database).

Hostile text (the reserved heading, the end marker, quotes, newlines) is mixed into every hit, so
the rendering properties also show that recalled text can never forge section structure.
"""

from __future__ import annotations

import dataclasses
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from continuity.rules import recall_overlap as overlap
from continuity.rules import recall_policy as kr
from continuity.rules.prompt_policy import RESERVED_RECALL_HEADING
from tests.support.recall_text import hit, render

# --- Properties of ranking, selection and rendering ------------------------------------------

TERMS = ["garden", "lighthouse", "heron"]
hit_text = st.lists(
    st.one_of(st.sampled_from([*TERMS, "gardening", "the", "Lighthouse", "HERON", "stone", "\n", RESERVED_RECALL_HEADING,
                               '"', "=== END AUTO-RECALLED CONTEXT ==="]), st.text(max_size=6)),
    max_size=15,
).map(" ".join)
hits_strategy = st.lists(
    st.builds(
        hit, hit_text, conversation=st.sampled_from(["a", "b", "c"]), title=st.text(max_size=10),
        role=st.sampled_from(["user", "assistant"]), minutes=st.integers(0, 500),
    ),
    max_size=12,
).map(lambda hits: [dataclasses.replace(h, message_id=f"m{i}") for i, h in enumerate(hits)])


@settings(max_examples=40, deadline=None)
@given(hits_strategy, st.lists(st.sampled_from(TERMS), min_size=1, max_size=3, unique=True), st.randoms())
def test_ranking_keeps_only_whole_word_matches_in_one_order_whatever_the_input_order(hits, terms, rnd):
    ranked = kr.rank_hits(hits, terms)
    shuffled = list(hits)
    rnd.shuffle(shuffled)
    assert kr.rank_hits(shuffled, terms) == ranked  # deterministic: input order never matters
    assert {h.message_id for h in ranked} == {h.message_id for h in hits if set(kr.words(h.content)) & set(terms)}
    scores = [kr.hit_score(h.content, terms) for h in ranked]
    assert [s[0] for s in scores] == sorted((s[0] for s in scores), reverse=True)  # more terms first


@settings(max_examples=40, deadline=None)
@given(hits_strategy, st.lists(st.sampled_from(TERMS), min_size=1, max_size=3, unique=True),
       st.lists(hit_text, max_size=3), st.integers(1, 12))
def test_selected_excerpts_are_bounded_ranked_and_never_repeat_carried_text(hits, terms, carried, limit):
    context = overlap.ContextText(carried)
    chosen = overlap.select_excerpts(hits, terms, context=context, limit=limit)
    ranked_ids = [h.message_id for h in kr.rank_hits(hits, terms)]
    chosen_ids = [e.hit.message_id for e in chosen]
    assert len(chosen) <= limit and len(set(chosen_ids)) == len(chosen_ids)
    assert chosen_ids == [i for i in ranked_ids if i in set(chosen_ids)]  # best first, as ranked
    for excerpt in chosen:
        assert len(excerpt.text) <= kr.EXCERPT_CHARACTERS + 2
        assert context.overlap(excerpt.text) < kr.OVERLAP_THRESHOLD


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(st.characters(max_codepoint=127), max_size=200), st.text(max_size=200)))
def test_words_are_the_runs_of_letters_and_digits_lower_cased_for_any_text(text):
    """ASCII text takes the split path, any other the regular expression: the same words either way."""
    assert kr.words(text) == re.findall(r"[^\W_]+", text.lower())


def overlap_from_scratch(carried: list[str], text: str, n: int = kr.OVERLAP_NGRAM) -> float:
    """The rule as it reads: the share of `text`'s word n-grams that occur within one carried text (a phrase
    shorter than n words: found whole within one)."""
    tokens = kr.words(text)
    if not tokens:
        return 0.0
    if len(tokens) < n:
        return 1.0 if any(f" {' '.join(tokens)} " in f" {' '.join(kr.words(c))} " for c in carried) else 0.0
    carried_grams = {tuple(w[i : i + n]) for c in carried for w in [kr.words(c)] for i in range(len(w) - n + 1)}
    own = [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return sum(gram in carried_grams for gram in own) / len(own)


few_words = st.lists(st.sampled_from(["pear", "Orchard", "the", "we", "said", "heron,", "12", "\n", "é", "_"]),
                     max_size=14).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(few_words, max_size=6), st.lists(few_words, min_size=1, max_size=6), st.booleans())
def test_overlap_is_the_share_of_ngrams_found_within_one_carried_text_whatever_the_order_of_checks(
        carried, checked, batch_first):
    """Looked up a batch at a time or one by one, in any order, each answer is the rule's from scratch."""
    context = overlap.ContextText(carried, n=3)
    if batch_first:
        context.grams_look_up(checked[: len(checked) // 2])
    for text in checked:
        assert context.overlap(text) == overlap_from_scratch(carried, text, n=3)


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=1500), st.sampled_from(TERMS))
def test_an_excerpt_is_a_cut_of_the_flattened_text_around_the_first_match(text, term):
    excerpt = kr.excerpt_around(text, [term])
    flat = " ".join(text.split())
    assert excerpt.removeprefix("…").removesuffix("…").strip() in flat
    if term in kr.words(flat) and len(flat) > kr.EXCERPT_CHARACTERS:
        assert term in kr.words(excerpt)


@settings(max_examples=40, deadline=None)
@given(hits_strategy, st.lists(st.sampled_from(TERMS), min_size=1, max_size=3, unique=True))
def test_rendered_section_has_one_heading_and_one_line_per_excerpt_whatever_the_text(hits, terms):
    excerpts = overlap.select_excerpts(hits, terms)
    section = render(excerpts)
    if not excerpts:
        assert section == ""
        return
    lines = section.splitlines()
    groups = len({e.hit.conversation_id for e in excerpts})
    # Heading, framing, then per conversation a blank line, its title line and one line per excerpt; the end.
    assert len(lines) == 2 + 2 * groups + len(excerpts) + 2
    assert [line.strip() for line in lines].count(RESERVED_RECALL_HEADING) == 1
    assert lines[0] == RESERVED_RECALL_HEADING and lines[-1] == kr.RECALL_END
    assert sum(1 for line in lines if line.strip() == kr.RECALL_END) == 1
    assert kr.contains_recall_section(section)
    quoted = [json.loads(line.split("): ", 1)[1]) for line in lines if line.startswith("- ")]
    assert len(quoted) == len(excerpts)


# --- The carried-text index kept between sends gives the same answers as a fresh one -----------------

