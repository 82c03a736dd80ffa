"""The owner's voice settings (issue 43): which are there and what each may hold.

None of them is read by a stored prompt, so saving them rebuilds no prompt
(`continuity.rules.refresh_triggers.PROMPT_SETTINGS`).
"""

from __future__ import annotations

import re

from elion.base.errors import InvalidInput
from transcript.provider.audio import sdk_voices

VOICE_FLAGS = ("read_aloud_auto", "keep_voice_recordings")
VOICE_FIELDS = ("voice", "voice_instructions", "voice_language", *VOICE_FLAGS)
VOICE_INSTRUCTIONS_MAX = 4_000
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


def voice_settings_check(changes: dict[str, object]) -> None:
    """400 for a voice the installed SDK does not list, over-long instructions, or a malformed language.

    Normalises `voice_language` (trimmed, lower case) in `changes`.
    """
    if "voice" in changes and changes["voice"] not in sdk_voices():
        raise InvalidInput(f"voice must be one of {', '.join(sdk_voices())}.", code="invalid_voice")
    if "voice_instructions" in changes:
        if not isinstance(changes["voice_instructions"], str):
            raise InvalidInput("voice_instructions must be text.", code="invalid_voice_instructions")
        if len(changes["voice_instructions"]) > VOICE_INSTRUCTIONS_MAX:
            raise InvalidInput(
                f"voice_instructions can be at most {VOICE_INSTRUCTIONS_MAX:,} characters.",
                code="invalid_voice_instructions",
            )
    if "voice_language" in changes:
        language = str(changes["voice_language"] or "").strip().lower()
        if language and not _LANGUAGE.match(language):
            raise InvalidInput(
                "voice_language must be an ISO-639-1 code such as `en`, or empty to let the model detect it.",
                code="invalid_voice_language",
            )
        changes["voice_language"] = language
