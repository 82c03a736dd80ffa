"""Reading archive text into speaker turns and chunks: pure functions, no database.

A speaker turn starts at a label line `<Name> said:` (seed, "Archive
Compatibility"): the current labels `AUMA said:`, `Elion Voicefire said:`,
`Clipboard said:`, older ones such as `Voicefire 5.1 said:`, and any other
`<Name> said:` whose words are capitalised (`ChatGPT said:`, `You said:`).
Light Markdown around a label (`**AUMA said:**`, `### AUMA said:`) is accepted.
The label may stand alone on its line (our exports: label line, then the
content) or be followed by the first line of speech.

Text with no label is prose and is cut into paragraph chunks.

A Branch / Fresh Chat handoff bubble inside one of our exports is quoted
history, not assistant speech: it is recognised by its heading and skipped
with the turns it quotes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from continuity.rules.handoff_policy import SEPARATOR as HANDOFF_TURN_SEPARATOR
from elion.base.uploads import normalise_newlines

PARSER_VERSION = "labels/2"

# Chunk sizes in characters: prose paragraphs are merged up to the target;
# nothing (a turn or a paragraph) is stored above the maximum.
CHUNK_TARGET_CHARACTERS = 1_200
CHUNK_MAX_CHARACTERS = 4_000

NAME_MAX_CHARACTERS = 60
NAME_MAX_WORDS = 6

DEFAULT_OWNER_NAMES = ("AUMA", "You", "User")
DEFAULT_ASSISTANT_NAMES = ("Elion Voicefire", "Elion", "Clipboard", "ChatGPT", "Assistant")

# The visible heading of a Branch / Fresh Chat bubble (continuity.rules.handoff_policy.visible_heading).
HANDOFF_HEADING_PREFIX = "### Continued from “"
_HANDOFF_RULE = HANDOFF_TURN_SEPARATOR.strip()  # the "---" line between quoted turns

_LABEL = re.compile(
    r"""^[ \t]*
    (?:\#{1,6}[ \t]+)?            # optional Markdown heading marks
    (?:\*\*|__)?                  # optional bold
    (?P<name>[^\s:*_#][^:\n*]*?)  # the speaker's name
    (?:\*\*|__)?
    [ \t]+said:
    (?:\*\*|__)?
    (?:[ \t]+(?P<rest>\S.*?))?
    [ \t]*$""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class SpeakerNames:
    """Who counts as the owner and who as the assistant when labels are read."""

    owner: tuple[str, ...] = DEFAULT_OWNER_NAMES
    assistant: tuple[str, ...] = DEFAULT_ASSISTANT_NAMES

    def role(self, name: str) -> str:
        folded = name.casefold()
        if folded in {n.casefold() for n in self.owner}:
            return "user"
        # Every Voicefire (5.1, 4o, …) is a prior voice of the assistant.
        if folded in {n.casefold() for n in self.assistant} or "voicefire" in folded:
            return "assistant"
        return ""


def speaker_names(owner_name: str, display_name: str) -> SpeakerNames:
    return SpeakerNames(
        owner=(owner_name, *DEFAULT_OWNER_NAMES),
        assistant=(display_name, *DEFAULT_ASSISTANT_NAMES),
    )


@dataclass(frozen=True)
class Turn:
    speaker: str
    role: str
    text: str
    spoken_at: datetime | None = None


@dataclass(frozen=True)
class ConversationProblem:
    """A conversation of an imported export that was not imported whole, and why (any importer's answer)."""

    index: int  # 0-based, across every file of the import
    file: str  # the file (or zip member) holding it
    title: str
    reason: str

    def as_dict(self) -> dict:
        return {"index": self.index, "title": self.title, "reason": self.reason, "file": self.file}


@dataclass(frozen=True)
class ParsedText:
    title: str  # from a leading `# Heading`, or ""
    preamble: str  # text before the first label, without the title line
    turns: tuple[Turn, ...]
    skipped_handoff_bubbles: int = 0


@dataclass(frozen=True)
class ChunkDraft:
    text: str
    speaker: str = ""
    role: str = ""
    turn: int | None = None
    spoken_at: datetime | None = None
    branch: str = "current"  # "alternate": a turn on a branch the owner left (an edit or a regeneration)


def _valid_name(name: str) -> bool:
    words = name.split()
    if not words or len(words) > NAME_MAX_WORDS or len(name) > NAME_MAX_CHARACTERS:
        return False
    # "And then she said:" is prose; names are capitalised words or numbers.
    return all(word[0].isupper() or word[0].isdigit() for word in words)


def match_label(line: str) -> tuple[str, str] | None:
    """`(name, rest of the line)` when `line` is a speaker label, else None."""
    if "said:" not in line:  # cheap pre-check: most lines are not labels
        return None
    found = _LABEL.match(line)
    if found is None:
        return None
    name = " ".join(found.group("name").split())
    if not _valid_name(name):
        return None
    return name, found.group("rest") or ""


def is_label_line(line: str) -> bool:
    return match_label(line) is not None


@dataclass
class _Block:
    name: str
    lines: list[str]

    @property
    def body(self) -> str:
        return "\n".join(self.lines)


def _split_blocks(lines: list[str]) -> tuple[list[str], list[_Block]]:
    preamble: list[str] = []
    blocks: list[_Block] = []
    for line in lines:
        label = match_label(line)
        if label is not None:
            name, rest = label
            blocks.append(_Block(name, [rest] if rest else []))
        elif blocks:
            blocks[-1].lines.append(line)
        else:
            preamble.append(line)
    return preamble, blocks


def _is_handoff_bubble(block: _Block) -> bool:
    first = next((line for line in block.lines if line.strip()), "")
    return first.startswith(HANDOFF_HEADING_PREFIX)


def _ends_with_rule(block: _Block) -> bool:
    body = block.body.rstrip()
    return body == _HANDOFF_RULE or body.endswith("\n" + _HANDOFF_RULE)


def _drop_handoff_bubbles(blocks: list[_Block]) -> tuple[list[_Block], int]:
    """Remove each bubble and the turns it quotes.

    In the bubble, quoted turns are separated by a `---` line; the last quoted
    turn is the first one not followed by that rule, so the next label after
    it begins real conversation again.
    """
    kept: list[_Block] = []
    bubbles = 0
    index = 0
    while index < len(blocks):
        if not _is_handoff_bubble(blocks[index]):
            kept.append(blocks[index])
            index += 1
            continue
        bubbles += 1
        index += 1  # the heading's block
        while index < len(blocks) and _ends_with_rule(blocks[index]):
            index += 1
        index += 1  # the last quoted turn
    return kept, bubbles


def _take_title(preamble: list[str]) -> tuple[str, list[str]]:
    for position, line in enumerate(preamble):
        if not line.strip():
            continue
        if line.startswith("# "):
            return line[2:].strip(), preamble[:position] + preamble[position + 1 :]
        break
    return "", preamble


def parse_labelled_text(text: str, names: SpeakerNames | None = None) -> ParsedText:
    """Split `text` into speaker turns at its label lines (no labels → no turns)."""
    names = names or SpeakerNames()
    preamble_lines, blocks = _split_blocks(normalise_newlines(text).split("\n"))
    blocks, bubbles = _drop_handoff_bubbles(blocks)
    title, preamble_lines = _take_title(preamble_lines)
    turns = tuple(Turn(block.name, names.role(block.name), block.body.strip()) for block in blocks)
    return ParsedText(
        title=title,
        preamble="\n".join(preamble_lines).strip(),
        turns=tuple(turn for turn in turns if turn.text),
        skipped_handoff_bubbles=bubbles,
    )


# --- Chunking ------------------------------------------------------------------


def split_long(text: str, limit: int = CHUNK_MAX_CHARACTERS) -> list[str]:
    """Cut `text` into pieces of at most `limit` characters at the gentlest boundary.

    Paragraph breaks first, then line breaks, then spaces; a single unbroken
    run longer than `limit` is cut hard. No character but the boundaries'
    whitespace is lost.
    """
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    for boundary in ("\n\n", "\n", " "):
        cut = text.rfind(boundary, 0, limit + 1)
        if cut > 0:
            return [text[:cut].strip(), *split_long(text[cut:], limit)]
    return [text[:limit], *split_long(text[limit:], limit)]


def paragraphs(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"\n[ \t]*\n", normalise_newlines(text)) if part.strip()]


def chunks_from_prose(
    text: str, target: int = CHUNK_TARGET_CHARACTERS, limit: int = CHUNK_MAX_CHARACTERS
) -> list[ChunkDraft]:
    """Paragraphs merged in order up to `target` characters, none above `limit`."""
    pieces: list[str] = []
    for paragraph in paragraphs(text):
        pieces.extend(split_long(paragraph, limit))
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + 2 + len(piece) <= target:
            chunks[-1] = f"{chunks[-1]}\n\n{piece}"
        else:
            chunks.append(piece)
    return [ChunkDraft(text=chunk) for chunk in chunks]


def chunks_from_turns(turns: Iterable[Turn], limit: int = CHUNK_MAX_CHARACTERS) -> list[ChunkDraft]:
    """One chunk per turn; a turn above `limit` becomes several chunks with its speaker."""
    drafts: list[ChunkDraft] = []
    for number, turn in enumerate(turns, start=1):
        for piece in split_long(turn.text, limit):
            drafts.append(ChunkDraft(piece, turn.speaker, turn.role, number, turn.spoken_at))
    return drafts


def chunk_text(text: str, names: SpeakerNames | None = None) -> tuple[ParsedText, list[ChunkDraft]]:
    """Turn chunks when the text has speaker labels; paragraph chunks otherwise."""
    parsed = parse_labelled_text(text, names)
    if not parsed.turns:
        return parsed, chunks_from_prose(normalise_newlines(text))
    return parsed, chunks_from_prose(parsed.preamble) + chunks_from_turns(parsed.turns)


def render_turns(title: str, turns: Iterable[Turn], *, header_lines: Iterable[str] = ()) -> str:
    """The archive's own text for a conversation: the layout of our Markdown export."""
    lines = [f"# {title}", ""] if title else []
    extra = [line for line in header_lines if line]
    if extra:
        lines += [*extra, ""]
    for turn in turns:
        lines += [f"{turn.speaker} said:", turn.text, ""]
    return "\n".join(lines).rstrip() + "\n"
