"""A reply's Markdown prepared for speech, and cut into segments the speech API can take (pure).

What is said (docs/voice.md "How a reply is read"):

- a fenced or indented code block is not read: it becomes "(There is a code block here.)" once;
- inline code keeps its words without the backticks;
- a link says its text; a bare URL says "a link to <host>"; an image says its alt text, if any;
- Markdown markup (headings, emphasis, lists, block quotes, table pipes, HTML tags, footnote marks)
  is dropped, keeping the words;
- the text is cut on sentence boundaries into segments: the first sentence alone so playback starts
  soon, then segments of about `SEGMENT_CHARACTERS`, each within the API's input limit; a sentence
  longer than `PIECE_LIMIT` is cut between words. The cut is the same on a reply still streaming as on
  the settled reply (`speech_segments(finished=False)`), so Talk reads a reply as it streams and a
  replay reuses that speech.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

CODE_BLOCK_SAID = "(There is a code block here.)"
SEGMENT_CHARACTERS = 240  # a later segment closes at the first sentence end at or past this length
PIECE_LIMIT = 1_200  # a longer sentence is cut between words
INPUT_LIMIT = 4_096  # the speech API's; a segment is at most SEGMENT_CHARACTERS + PIECE_LIMIT long

_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_INDENTED = re.compile(r"(?:(?<=\n\n)|\A)(?:(?: {4}|\t)[^\n]*(?:\n|\Z))+")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\((?:[^()]|\([^)]*\))*\)")
_REFERENCE_LINK = re.compile(r"\[([^\]]+)\]\[[^\]]*\]")
_URL = re.compile(r"<?\bhttps?://[^\s<>)\]]*[^\s<>)\].,;:!?'\"]>?")
_INLINE_CODE = re.compile(r"`+([^`]+)`+")
_HTML = re.compile(r"</?[A-Za-z][^>]*>")
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t]+", re.M)
_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+", re.M)
_BULLET = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+", re.M)
_RULE = re.compile(r"^[ \t]*(?:[-*_][ \t]*){3,}$", re.M)
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$", re.M)
_EMPHASIS = re.compile(r"(\*\*|__|\*|_|~~)(?=\S)(.+?)(?<=\S)\1")
_FOOTNOTE = re.compile(r"\[\^[^\]]+\]")
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[.!?…][\"'”’)\]])\s+|\n+")
_ENDS_A_SENTENCE = re.compile(r"[.!?…:;][\"'”’)\]]*$")


def _host(match: re.Match) -> str:
    host = urlsplit(match.group(0).strip("<>")).hostname or "the web"
    return f"a link to {host.removeprefix('www.')}"


def speech_text(markdown: str) -> str:
    """The words of a reply as they should be spoken."""
    text = markdown.replace("\r\n", "\n")
    text = _FENCE.sub(f"\n{CODE_BLOCK_SAID}\n\n", text)
    text = _INDENTED.sub(f"{CODE_BLOCK_SAID}\n\n", text)
    text = _IMAGE.sub(lambda m: m.group(1), text)
    text = _LINK.sub(lambda m: m.group(1), text)
    text = _REFERENCE_LINK.sub(lambda m: m.group(1), text)
    text = _URL.sub(_host, text)
    text = _INLINE_CODE.sub(lambda m: m.group(1), text)
    text = _HTML.sub("", text)
    text = _FOOTNOTE.sub("", text)
    text = _TABLE_RULE.sub("", text)
    text = _RULE.sub("", text)
    text = _HEADING.sub("", text)
    text = _QUOTE.sub("", text)
    text = _BULLET.sub("", text)
    for _ in range(2):  # nested emphasis (***both***)
        text = _EMPHASIS.sub(lambda m: m.group(2), text)
    text = "\n".join(line.strip().strip("|").replace(" | ", ", ").strip() for line in text.split("\n"))
    text = re.sub(rf"(?:{re.escape(CODE_BLOCK_SAID)}\s*)+", CODE_BLOCK_SAID + "\n\n", text)
    text = re.sub(r"[ \t]+", " ", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def _sentences(text: str) -> list[str]:
    """Sentences and lines (a heading, a list item), each ending as a sentence does, so joined they read."""
    pieces = [p.strip() for p in _SENTENCE_END.split(text)]
    return [p if _ENDS_A_SENTENCE.search(p) else p + "." for p in pieces if p]


def _cut_long(sentence: str, limit: int) -> list[str]:
    """A sentence longer than `limit` cut between words (between characters if one word is longer)."""
    parts: list[str] = []
    current = ""
    for word in sentence.split(" "):
        while len(word) > limit:
            if current:
                parts.append(current)
                current = ""
            parts.append(word[:limit])
            word = word[limit:]
        candidate = f"{current} {word}" if current else word
        if len(candidate) > limit:
            parts.append(current)
            current = word
        else:
            current = candidate
    if current:
        parts.append(current)
    return parts


def speech_segments(text: str, *, finished: bool = True) -> list[str]:
    """`text` (already `speech_text`) as segments of whole sentences, each within INPUT_LIMIT.

    The first segment is the first sentence alone (playback starts soon); each later one closes at the
    end of the first sentence that brings it to SEGMENT_CHARACTERS. A segment's end depends only on the
    text before it, so a reply still being written (`finished=False`: its last sentence counts only once
    text follows it, and a segment not yet closed is left out) gives the first segments of the settled
    reply, word for word, and their speech is the speech a replay finds.
    """
    sentences = _sentences(text)
    if not finished:
        sentences = sentences[:-1]
    segments: list[str] = []
    current = ""
    for sentence in sentences:
        for piece in _cut_long(sentence, PIECE_LIMIT):
            current = f"{current} {piece}" if current else piece
            if not segments or len(current) >= SEGMENT_CHARACTERS:
                segments.append(current)
                current = ""
    if current and finished:
        segments.append(current)
    return segments
