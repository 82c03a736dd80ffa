"""Automatic conversation titles: from the first message, and for Branch / Fresh Chat.

A title is read in the sidebar, the tab and the exports, so it is plain text:
the first message's Markdown is parsed (the same CommonMark + tables +
strikethrough dialect the replies are rendered with) and only its words are
kept — heading marks, emphasis, link targets, image URLs, list bullets and
code fences go; link texts, image alt texts and code stay. Whitespace runs
become one space, and a title longer than `AUTO_TITLE_CHARACTERS` is cut at
the last word boundary that fits and ends with "…". Pure functions: no I/O.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

AUTO_TITLE_CHARACTERS = 60
ELLIPSIS = "…"
# Suffixes titles carried before issue 34 (origins are badges now); migration 0018 removes them.
OLD_ORIGIN_SUFFIXES = {"branch": " (branch)", "fork": " (fork)"}
# A title needs the opening words only; a long first message is not parsed whole.
PARSED_CHARACTERS = 4_000
# NUL, C0/C1 controls and unpaired surrogates never reach a title (input
# checks refuse them at the edge; a title must not crash on them either).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)
# Inline tokens whose own text is what a reader sees.
_TEXT_INLINE = {"text", "code_inline"}
_BREAK_INLINE = {"softbreak", "hardbreak"}
# Block tokens that carry their text directly (no inline children).
_TEXT_BLOCKS = {"fence", "code_block"}


def _inline_words(children: list[Token]) -> list[str]:
    words: list[str] = []
    for child in children:
        if child.type in _TEXT_INLINE:
            words.append(child.content)
        elif child.type in _BREAK_INLINE:
            words.append(" ")
        elif child.type == "image":
            words.append(" ".join(_inline_words(child.children or [])))
    return words


def markdown_plain_text(text: str) -> str:
    """What a reader sees of `text` as rendered Markdown, on one line."""
    text = _UNPRINTABLE.sub("", (text or "")[:PARSED_CHARACTERS])
    pieces: list[str] = []
    for token in _MARKDOWN.parse(text):
        if token.type == "inline":
            pieces.append("".join(_inline_words(token.children or [])))
        elif token.type in _TEXT_BLOCKS:
            pieces.append(token.content)
    plain = " ".join(" ".join(pieces).split())
    # A message of Markdown punctuation only (a lone `---`, `#`): keep its characters.
    return plain or " ".join(text.split())


def title_shortened(text: str, limit: int = AUTO_TITLE_CHARACTERS) -> str:
    """`text` on one line, at most `limit` characters: cut at a word boundary, ending in "…"."""
    text = " ".join(_UNPRINTABLE.sub("", text or "").split())
    if len(text) <= limit:
        return text
    room = text[: limit - len(ELLIPSIS) + 1]
    cut = room.rfind(" ")
    # One word longer than the whole title is cut inside the word.
    head = room[:cut] if cut > 0 else room[: limit - len(ELLIPSIS)]
    return head.rstrip(" ,;:.-–—") + ELLIPSIS


def title_from_first_message(content: str, attachment_names: list[str] | None = None) -> str:
    """A new conversation's title: its first message's words, or its attachments' names when it has no text."""
    plain = markdown_plain_text(content) if (content or "").strip() else ""
    return title_shortened(plain or ", ".join(attachment_names or []))


def branch_title(source_title: str) -> str:
    """A Branch / Fresh Chat conversation's title: its source's title, shortened to fit. "Branch" is a
    badge beside it (`Conversation.origin_badge`), never a suffix a truncated row would cut off."""
    return title_shortened(source_title or "", AUTO_TITLE_CHARACTERS) or "New chat"


def title_before_words(content: str) -> str:
    """The title the first send made before titles were words: the raw text, whitespace folded, cut at 60."""
    return " ".join((content or "").split())[:AUTO_TITLE_CHARACTERS]
