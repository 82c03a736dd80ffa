"""Speaker labels and the assistant's name: the one place for both (handoffs, exports, pages, compaction).

| Persona   | User label  | Assistant label        |
| Elion     | AUMA said:  | Elion Voicefire said:  |
| Clipboard | AUMA said:  | Clipboard said:        |

Owner and assistant display names are settings with these defaults.
"""

from __future__ import annotations

CLIPBOARD_NAME = "Clipboard"


def assistant_name(persona: str, *, display_name: str) -> str:
    """The assistant's name in a persona: the configured display name for Elion,
    the persona's own name otherwise (bubbles, handoffs, exports, compaction)."""
    return CLIPBOARD_NAME if persona == "clipboard" else display_name


def speaker_label(role: str, persona: str, *, owner_name: str, display_name: str) -> str:
    if role == "user":
        return f"{owner_name} said:"
    return f"{assistant_name(persona, display_name=display_name)} said:"
