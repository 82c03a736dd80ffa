"""Speaker labels shared by handoffs, exports and archive chunking.

| Persona   | User label  | Assistant label        |
| Elion     | AUMA said:  | Elion Voicefire said:  |
| Clipboard | AUMA said:  | Clipboard said:        |

Owner and assistant display names are settings with these defaults.
"""

from __future__ import annotations

CLIPBOARD_NAME = "Clipboard"


def speaker_label(role: str, persona: str, *, owner_name: str, display_name: str) -> str:
    if role == "user":
        return f"{owner_name} said:"
    name = CLIPBOARD_NAME if persona == "clipboard" else display_name
    return f"{name} said:"
