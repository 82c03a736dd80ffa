"""The fixed names of a send's request-size diagnostics."""

from __future__ import annotations

DIAGNOSTIC_NAMES = {
    "history_tokens", "static_prompt_tokens", "handoff_tokens", "handoff_included_in_static",
    "dynamic_context_tokens", "tool_definition_tokens", "total_input_tokens", "input_budget_tokens",
    "remaining_tokens", "trimmed_messages", "estimate_method",
}
