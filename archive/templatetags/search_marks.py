"""`{{ text|marked:terms }}`: `text` escaped, with every whole-token match of the search `terms` in `<mark>`.

Each piece of the text is escaped on its own and only the `<mark>` tags are
markup, so a match can never fall inside an entity (searching "amp" does not
mark the `&amp;` of an escaped "&") and the text cannot inject anything.
`terms` are the query's tokens (`elion.base.fulltext.query_terms`), the same words
the search matched on.
"""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from elion.base.fulltext import term_spans

register = template.Library()


@register.filter
def marked(text: object, terms: list[str] | None) -> SafeString:
    text = "" if text is None else str(text)
    pieces: list[str] = []
    last = 0
    for start, end in term_spans(text, list(terms or [])):
        pieces += [escape(text[last:start]), f'<mark class="match">{escape(text[start:end])}</mark>']
        last = end
    pieces.append(escape(text[last:]))
    return mark_safe("".join(pieces))  # noqa: S308 - every piece above is escaped; only <mark> is markup
