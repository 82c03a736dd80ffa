"""Policy markers recorded on every stored static prompt.

A stored prompt whose markers differ from the current ones was built under an
older policy and is rebuilt before it can reach the model (seed: "Stored
prompts from an older recall policy are rebuilt before use"; "Existing stored
static prompts migrate through the current handoff-size policy marker before
reuse").
"""

from __future__ import annotations

from continuity.rules.handoff_store import current_policy_marker
from continuity.rules.prompt_policy import PROMPT_POLICY

# Automatic keyword recall: never during the birth period, the reserved
# heading rejected in an opening request and quoted where users wrote it
# (custom instructions, memories, characters, and owner/assistant names).
RECALL_POLICY = "recall/2026-12-01.birth-gated.names-quoted"


def handoff_size_policy() -> str:
    """Names the handoff policy version and the active (sanitised) limits, so
    changing either marks stored prompts stale."""
    return current_policy_marker()


def policy_markers() -> dict[str, str]:
    return {
        "prompt_policy": PROMPT_POLICY,
        "recall_policy": RECALL_POLICY,
        "handoff_size_policy": handoff_size_policy(),
    }
