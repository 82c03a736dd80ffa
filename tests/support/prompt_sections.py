"""Reading a built static prompt's sections back out of its text: a reference for tests only (the app carries
the prior-thread section as data, `prompt_policy.BuiltPrompt.handoff_span`)."""

from __future__ import annotations

from continuity.rules.prompt_policy import PRIOR_THREAD_HEADING


def prior_thread_section_in(prompt: str) -> str:
    """The prior-thread continuity section of a built prompt, exactly as it stands ("" if none).

    Sections are joined by blank lines and the handoff block has none inside
    (each quoted message is one JSON string), so the section runs from its
    heading to the next section's heading. The last such heading is the real
    one (only fixed sections follow it), and it must hold a verbatim block.
    """
    start = prompt.rfind("\n\n" + PRIOR_THREAD_HEADING)
    start = start + 2 if start >= 0 else (0 if prompt.startswith(PRIOR_THREAD_HEADING) else -1)
    if start < 0:
        return ""
    end = prompt.find("\n\n## ", start)
    section = prompt[start:] if end < 0 else prompt[start:end]
    return section if "\nBEGIN VERBATIM_EXCHANGE_" in section else ""
