"""Automatic conversation titles: from the first message, and for Branch, Fork and an archive's continuation.

A title is read in the sidebar, the tab and the exports, so it is plain text:
the first message's Markdown is parsed (the same CommonMark + tables +
strikethrough dialect the replies are rendered with) and only its words are
kept — heading marks, emphasis, link targets, image URLs, list bullets go; link
texts, image alt texts and inline code stay. Where the message has a heading,
its first heading's text is the title (the writer's own name for it);
otherwise the prose, with code blocks left out (code is no name: "Garden plans
def hi(): return 42 What should I…" was one, issue 41); a message of code only
is titled by its code. Whitespace runs become one space, and a title longer
than `AUTO_TITLE_CHARACTERS` is cut at the last word boundary that fits and
ends with "…".

A copy (Branch / Fresh Chat, Fork, an archive document continued) carries its
source's title with a number, "Harbour plans (2)", "(3)"…, the next one free
in that family among the titles already taken, so the copies of one chat are
told apart in the sidebar (issue 41); the number always fits, the source's
words give way. An archive document's first continuation, whose title no
conversation holds yet, takes the document's title alone. Where the copy came from is a badge beside the title
(`Conversation.origin_badge`). Pure functions: no I/O (the caller reads the
titles taken, `conversations.services.threads.thread_writes.copy_title_for`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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
# Block tokens that carry their text directly (no inline children): code.
_CODE_BLOCKS = {"fence", "code_block"}
# A copy's number: "Harbour plans (3)".
_NUMBERED = re.compile(r"(?P<root>.*) \((?P<number>[1-9][0-9]{0,5})\)")


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


def _words(tokens: list[Token], *, code: bool) -> str:
    pieces: list[str] = []
    for token in tokens:
        if token.type == "inline":
            pieces.append("".join(_inline_words(token.children or [])))
        elif code and token.type in _CODE_BLOCKS:
            pieces.append(token.content)
    return " ".join(" ".join(pieces).split())


def _parsed(text: str) -> tuple[str, list[Token]]:
    text = _UNPRINTABLE.sub("", (text or "")[:PARSED_CHARACTERS])
    return text, _MARKDOWN.parse(text)


def markdown_plain_text(text: str) -> str:
    """What a reader sees of `text` as rendered Markdown, on one line (code blocks included)."""
    text, tokens = _parsed(text)
    # A message of Markdown punctuation only (a lone `---`, `#`): keep its characters.
    return _words(tokens, code=True) or " ".join(text.split())


def first_message_words(text: str) -> str:
    """What a title is made of: the first heading's text where there is one, else the prose without its code
    blocks, else (a message of code only) the code, else the characters themselves."""
    text, tokens = _parsed(text)
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and (heading := _words(tokens[index + 1 : index + 2], code=False)):
            return heading
    return _words(tokens, code=False) or _words(tokens, code=True) or " ".join(text.split())


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
    plain = first_message_words(content) if (content or "").strip() else ""
    return title_shortened(plain or ", ".join(attachment_names or []))


def copy_family(source_title: str) -> str:
    """The words every copy of `source_title` is titled by: its title without a copy's number ("New chat" when
    it has none). A copy of "Harbour plans (2)" joins "Harbour plans"'s family."""
    title = " ".join(_UNPRINTABLE.sub("", source_title or "").split())
    match = _NUMBERED.fullmatch(title)
    return (match["root"] if match else title) or "New chat"


def _number_in(family: str, title: str) -> int | None:
    """The number `title` holds in `family` (1 for the family's own title), or None for another title."""
    match = _NUMBERED.fullmatch(title)
    root, number = (match["root"], int(match["number"])) if match else (title, 1)
    cut_short = root.endswith(ELLIPSIS) and family.startswith(root[: -len(ELLIPSIS)])
    return number if root == family or cut_short else None


def copy_title(source_title: str, taken: Iterable[str], limit: int = AUTO_TITLE_CHARACTERS) -> str:
    """A copy's title: its family's words and the next number free among the `taken` titles,
    "Harbour plans (2)"; the number always fits within `limit`, the words give way. The first of a family no
    conversation holds yet (an archive document's first continuation) takes the words alone."""
    family = copy_family(source_title)
    numbers = [number for title in taken if (number := _number_in(family, title)) is not None]
    if not numbers:
        return title_shortened(family, limit)
    suffix = f" ({max(numbers) + 1})"
    return title_shortened(family, limit - len(suffix)) + suffix


def title_before_words(content: str) -> str:
    """The title the first send made before titles were words: the raw text, whitespace folded, cut at 60."""
    return " ".join((content or "").split())[:AUTO_TITLE_CHARACTERS]
