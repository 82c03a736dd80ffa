"""Assistant Markdown to safe HTML, rendered server-side.

Two layers, on purpose: markdown-it runs with raw HTML off (so `<script>` in a
reply is text, and its link validator refuses `javascript:`/`data:` URLs), and
nh3 then cleans the output against a short allow-list, so a parser bug or a
future plugin cannot smuggle markup or event handlers into the page.
"""

from __future__ import annotations

from collections.abc import Sequence

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import OptionsDict

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
    "code": {"class"},
}
URL_SCHEMES = {"http", "https", "mailto"}


def _image_as_link(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict) -> str:
    """Images become plain links: a reply must not make the browser fetch a
    third-party URL just by being displayed."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    alt = self.renderInlineAsText(token.children or [], options, env) or src
    return f'<a href="{escapeHtml(src)}">{escapeHtml(alt)}</a>'


def _build_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_link)
    return md


_MARKDOWN = _build_parser()
assert isinstance(_MARKDOWN.renderer, RendererHTML)


def _allowed_style(element: str, attribute: str, value: str) -> str | None:
    # Table alignment is the only inline style markdown-it emits.
    if attribute == "style":
        return value if value in ("text-align:left", "text-align:center", "text-align:right") else None
    if element == "code" and attribute == "class":
        return value if value.startswith("language-") and " " not in value else None
    return value


def render_markdown(text: str) -> str:
    """Markdown source in, sanitised HTML fragment out (safe to mark safe)."""
    html = _MARKDOWN.render(text or "")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags={"script", "style"},
        attributes=ALLOWED_ATTRIBUTES,
        attribute_filter=_allowed_style,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )
