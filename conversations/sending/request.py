"""Building the model request for the reply at the head: stored rows in, the assembled request out.

The pure assembly is `continuity.request_assembly`; this module gathers its
inputs (live branch, verified attachment parts, compaction, dynamic
context, the tools on offer).
"""

from __future__ import annotations

from uuid import UUID

from django.conf import settings

from continuity.compaction import compaction_projection
from continuity.dynamic_context import dynamic_context_build
from continuity.request_assembly import AssembledRequest, HistoryTurn, assemble_request
from continuity.static_prompt import prior_thread_section_in
from conversations.assistant_settings import assistant_settings_get
from conversations.attachments.services import (
    attachment_parts_verified,
    manifests_for,
)
from conversations.models import AssistantSettings, Conversation, Message, Role
from conversations.provider.gateway import ProviderConfig
from conversations.sending import tool_loop
from conversations.transcript.tree import is_projectable, live_branch, static_prompt_message


def reply_tools(config: ProviderConfig, settings_row: AssistantSettings | None = None) -> list[dict]:
    row = settings_row or assistant_settings_get()
    return tool_loop.available_tools(
        archive_access=row.archive_access, web_search=row.web_search, api_selector=config.api_selector
    )


def reply_request_build(
    conversation: Conversation,
    prompt: Message | None = None,
    *,
    tools: list[dict] | None = None,
    branch: list[Message] | None = None,
    settings_row: AssistantSettings | None = None,
) -> AssembledRequest:
    """The model input for the reply at the head: stored rows in, request out.

    `branch` is the live branch when the caller already walked it;
    `settings_row` the AssistantSettings row when the caller already read it.
    """
    prompt = prompt or static_prompt_message(conversation)
    branch = live_branch(conversation) if branch is None else branch
    # Every blob the branch references is verified, also those a compaction now stands in for.
    attachment_parts = branch_attachment_parts(conversation, branch)
    # A compaction whose boundary lies on this branch stands in for the turns it covers.
    compacted = compaction_projection(conversation, branch)
    history = [
        HistoryTurn(
            m.role, m.content, tuple(tool_loop.project_tool_parts(m.parts)), attachment_parts.get(m.id, ())
        )
        for m in compacted.branch_after
        if is_projectable(m, has_attachments=m.id in attachment_parts)
    ]
    static_prompt = prompt.content if prompt else ""
    # Layer 2, fresh for this send and never stored: pinned character + keyword recall.
    dynamic = dynamic_context_build(
        conversation,
        branch=branch,
        static_prompt=static_prompt,
        history=[turn.content for turn in history],
        settings_row=settings_row,
    )
    return assemble_request(
        static_prompt=static_prompt,
        history=history,
        dynamic_context=dynamic.text,
        handoff_text=prior_thread_section_in(static_prompt),
        tool_definitions_text=tool_loop.tool_definitions_text(tools or []),
        input_budget_tokens=settings.ELION_INPUT_BUDGET_TOKENS,
        birth_period=dynamic.birth_period,
        compacted_summary=compacted.summary_text,
    )


def branch_attachment_parts(conversation: Conversation, branch: list[Message]) -> dict[UUID, tuple[dict, ...]]:
    """Every manifest on the branch, each blob re-verified, as request parts.

    Seed 004: resume revalidates every referenced blob before model
    projection; a missing or tampered one raises AttachmentUnavailable (409,
    naming it), which rolls the caller's transaction back.
    """
    return attachment_parts_verified(conversation.id, manifests_for(m for m in branch if m.role == Role.USER))
