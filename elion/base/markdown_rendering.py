"""Assistant Markdown to safe HTML, rendered server-side.

Two layers, on purpose: markdown-it runs with raw HTML off (so `<script>` in a
reply is text, and its link validator refuses `javascript:`/`data:` URLs), and
nh3 then cleans the output against a short allow-list, so a parser bug or a
future plugin cannot smuggle markup or event handlers into the page.

The streaming bubble renders the same text in the browser with the same parser
(static/js/chat/markdown.js: markdown-it with these options and rules, DOMPurify
with this allow-list), so a reply keeps its layout when the server's rendering
replaces it at `done`. Any change here must be made there too;
tests/pages/test_markdown_streaming.py renders one corpus both ways and compares.

Code blocks come wrapped with a header carrying the fence's language as a label;
the browser adds the syntax highlighting (highlight.js, vendored) and the Copy
button to every code block, streamed or settled alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml, unescapeAll
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import OptionsDict

ALLOWED_TAGS = {
    "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td", "div", "span",
}
ALLOWED_ATTRIBUTES = {
    "*": set(),  # none on every element (nh3 would otherwise keep `title` and `lang` anywhere)
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"class"},
    "td": {"class"},
    "code": {"class"},
    "div": {"class"},
    "span": {"class"},
}
URL_SCHEMES = {"http", "https", "mailto"}
# Elements dropped with everything in them (the others not allowed leave their text behind).
CLEAN_CONTENT_TAGS = {"script", "style", "svg", "math", "xmp"}
# Table alignment, as a class: the pages' Content-Security-Policy refuses style attributes.
ALIGNMENT_CLASSES = {"align-left", "align-center", "align-right"}
# The wrapper a code block is rendered in, and the table cells' alignment: div, span, th and td carry only these.
ELEMENT_CLASSES = {
    "div": {"code-block", "code-head"},
    "span": {"code-lang"},
    "th": ALIGNMENT_CLASSES,
    "td": ALIGNMENT_CLASSES,
}
# A fence's language, when it is a plain name ("python", "c++", "objective-c"); anything else is no language.
CODE_LANGUAGE = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")


def code_language(info: str) -> str:
    """The language a fence names: the first word of its info string, if it is a plain name."""
    first = re.split(r"[ \t]+", unescapeAll(info).strip(" \t"), maxsplit=1)[0]
    return first if CODE_LANGUAGE.fullmatch(first) else ""


def code_block_html(code: str, language: str) -> str:
    """A code block: a header (the language label; the browser adds Copy) above the <pre>."""
    label = f'<span class="code-lang">{language}</span>' if language else ""
    language_class = f' class="language-{language}"' if language else ""
    return (
        f'<div class="code-block"><div class="code-head">{label}</div>'
        f"<pre><code{language_class}>{escapeHtml(code)}</code></pre></div>\n"
    )


def _fence(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict) -> str:
    token = tokens[idx]
    return code_block_html(token.content, code_language(token.info))


def _indented_code(self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict) -> str:
    return code_block_html(tokens[idx].content, "")


def _alignment_as_class(state: StateCore) -> None:
    """A table cell's `style="text-align:…"` becomes `class="align-…"` (markdown.css aligns it)."""
    for token in state.tokens:
        if token.type not in ("th_open", "td_open"):
            continue
        style = token.attrGet("style")
        if isinstance(style, str) and style.startswith("text-align:"):
            del token.attrs["style"]
            token.attrSet("class", f"align-{style.removeprefix('text-align:')}")


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
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _indented_code)
    md.core.ruler.push("alignment_as_class", _alignment_as_class)
    return md


_MARKDOWN = _build_parser()
assert isinstance(_MARKDOWN.renderer, RendererHTML)


def _allowed_attribute(element: str, attribute: str, value: str) -> str | None:
    if element == "code" and attribute == "class":
        return value if value.startswith("language-") and CODE_LANGUAGE.fullmatch(value[9:]) else None
    if attribute == "class":
        return value if value in ELEMENT_CLASSES.get(element, ()) else None
    return value


def sanitised_html(html: str) -> str:
    """HTML cut back to what the Markdown rendering writes: these tags, attributes, classes and URL schemes."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags=CLEAN_CONTENT_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        attribute_filter=_allowed_attribute,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        set_tag_attribute_values={"a": {"target": "_blank"}},
    )


def render_markdown(text: str) -> str:
    """Markdown source in, sanitised HTML fragment out (safe to mark safe)."""
    return sanitised_html(_MARKDOWN.render(text or ""))
