"""The model's deliberate tools carried out, and the tool rounds inside a reply.

Each tool is a value (`Tool`: its name and the function that carries out a
call) in one table, `TOOLS`: the send's own tools below, and those the apps
that own the rest add from their `AppConfig.ready` through `tools_add`
(`archive.apps` adds `archive.sending.tools.ARCHIVE_TOOLS`, `check_ins.apps`
adds `check_ins.sending.tools.CHECK_IN_TOOLS`), so this package imports
neither app. `run_tool` finds a call's tool there, and answers a name it does
not hold, or one not offered, with an error result.
tests/conversations/sending/test_tool_table.py holds the table to its list.

Tools (offered by `conversations.sending.tool_offer.available_tools`, which
holds their neutral definitions as `provider_gateway.stream_reply` takes them;
a definition that reads its app's rules comes with its `Tool`):

* `search_past_conversations`: live-branch user/assistant speech of other
  conversations that may feed automatic continuity (never hidden, trashed,
  Continuity-Shielded, the other persona's, or the current conversation;
  never system prompts, handoff bubbles or tool output).
* `search_archive`: only offered when Archive access is on; results cite the
  document title, collection and chunk (`archive.sending.tools`).
* `list_library` / `read_library_file`: the Library, read a page at a time
  (`archive.sending.tools`).
* `create_artifact` / `update_artifact` / `read_artifact`: standalone pieces
  (poems, reflections, letters, stories) kept as artifacts with versions
  (`artifacts.services`); an update adds a version. `read_artifact` is the
  only way the model reaches an earlier artifact: nothing puts one into a
  request by itself.
* `propose_memory`: only while "Elion may suggest memories" is on and the
  conversation may suggest (`conversations.sending.memory_tool`); it records
  a proposal for the owner, never a memory.
* `propose_check_in`: under the same rules, with Settings → "Elion may propose
  check-ins" (`check_ins.sending.tools`); it records a proposal,
  never a schedule.
* Web search: the Responses API's built-in tool, only when enabled in
  Settings and the selector is `responses`.
* Image generation, only when enabled in Settings: the Responses API's
  built-in `image_generation` tool on `responses`, the app's own
  `generate_image` on `chat.completions` (carried out through the Images API
  by `conversations.sending.images`, which also stores what either makes).

Nothing from the archive, the Library or other conversations enters a request
unless the model calls one of these tools.

Each call and its result are stored as a pair of parts on the assistant
message (`{"type": "tool_call", "call_id", "name", "arguments", "round"}`,
`{"type": "tool_result", "call_id", "content", "is_error"}`), each written as
it happens. `transcript.tool_pairing.project_tool_parts` turns stored parts back into request
messages, pairing every call with exactly one result; a call whose result was
never stored (the process died mid-tool) gets a synthetic error result,
marked as such. Parts never enter `Message.content`, so handoffs, recall and
the visible estimate never see them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from uuid import UUID

from django.core.exceptions import ImproperlyConfigured
from django.db.models import QuerySet
from django.utils import timezone

from artifacts import services as artifacts
from continuity.rules.eligibility import model_search_sources
from conversations.sending import memory_tool
from conversations.services.visibility.past_search import past_conversation_search as owner_search
from elion.base.errors import ServiceError
from transcript.models import Message
from transcript.provider.gateway import ProviderConfig, ToolCallRequested

logger = logging.getLogger(__name__)

RESULT_MAX_CHARACTERS = 16_000
PAST_SEARCH_LIMIT = 8
PAST_SEARCH_CANDIDATES = 50
ARCHIVE_SEARCH_LIMIT = 8
ARTIFACT_LIST_LIMIT = 50
# --- The tools -------------------------------------------------------------------


@dataclass(frozen=True)
class ToolContext:
    conversation_id: UUID
    persona: str
    # The reply the tools run for, and (set by `run_tool` for each call) the call: an artifact's provenance.
    message_id: UUID | None = None
    call_id: str = ""
    # The character pinned for the message this reply answers (an image of no named character is of it),
    # and the conversation's provider binding (the Images API is asked on the same one).
    pinned_character_id: int | None = None
    config: ProviderConfig | None = None


@dataclass(frozen=True)
class ToolResult:
    content: str
    is_error: bool = False


class ToolInputError(Exception):
    """The model's arguments cannot be used; the model reads the message."""


def text_arg(args: dict, name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"{name} must be a non-empty string.")
    return value


def int_arg(args: dict, name: str, default: int, low: int, high: int | None = None) -> int:
    value = args.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ToolInputError(f"{name} must be an integer of at least {low}.")
    return min(value, high) if high is not None else value


def past_conversation_search(*, query: str, context: ToolContext, limit: int = PAST_SEARCH_LIMIT) -> list[dict]:
    """Excerpts from the conversations the model may search, best match first.

    Matching and ranking are the owner's Past Conversation Search (live-branch
    user/assistant speech only); which conversations count is
    `continuity.rules.eligibility.model_search_sources`: its persona's automatic
    continuity sources, never shielded, never the current conversation.
    """
    # Shielded conversations are never asked for; the wider limit leaves room
    # for hits the model may not see (the current thread, the other persona).
    hits = owner_search(query, include_shielded=False, limit=PAST_SEARCH_CANDIDATES)
    allowed = set(
        model_search_sources(persona=context.persona, current_conversation_id=context.conversation_id)
        .filter(pk__in={hit.conversation_id for hit in hits})
        .values_list("pk", flat=True)
    )
    return [
        {
            "conversation_title": hit.conversation_title,
            "role": hit.role,
            "date": hit.created_at.date().isoformat(),
            "excerpt": hit.excerpt,
        }
        for hit in hits
        if hit.conversation_id in allowed
    ][:limit]


def _search_past_conversations(args: dict, context: ToolContext) -> str:
    query = text_arg(args, "query")
    hits = past_conversation_search(
        query=query, context=context, limit=int_arg(args, "limit", PAST_SEARCH_LIMIT, 1, PAST_SEARCH_LIMIT)
    )
    grouped: dict[str, list[dict]] = {}
    for hit in hits:
        grouped.setdefault(hit.pop("conversation_title"), []).append(hit)
    return json.dumps(
        {"query": query, "conversations": [{"title": t, "excerpts": e} for t, e in grouped.items()]},
        ensure_ascii=False,
    )


def _provenance(context: ToolContext) -> artifacts.Provenance:
    if context.message_id is None:
        raise ToolInputError("artifacts can only be written inside a reply.")
    return artifacts.Provenance(
        conversation_id=context.conversation_id, message_id=context.message_id, tool_call_id=context.call_id
    )


def _readable_artifacts(context: ToolContext) -> QuerySet:
    return artifacts.model_readable_artifacts(persona=context.persona, conversation_id=context.conversation_id)


def _create_artifact(args: dict, context: ToolContext) -> str:
    try:
        version = artifacts.artifact_create(
            title=args.get("title"), kind=args.get("kind"), content=args.get("content"),
            provenance=_provenance(context),
        )
    except ServiceError as exc:
        raise ToolInputError(exc.detail) from exc
    artifact = version.artifact
    return json.dumps(
        {"artifact_id": artifact.pk, "title": artifact.title, "kind": artifact.kind, "version": version.number},
        ensure_ascii=False,
    )


def _update_artifact(args: dict, context: ToolContext) -> str:
    artifact_id = int_arg(args, "artifact_id", -1, 1)
    try:
        version = artifacts.artifact_update(
            artifact_id=artifact_id, content=args.get("content"), provenance=_provenance(context),
            within=_readable_artifacts(context),
        )
    except ServiceError as exc:
        raise ToolInputError(exc.detail) from exc
    return json.dumps(
        {"artifact_id": artifact_id, "title": version.artifact.title, "version": version.number}, ensure_ascii=False
    )


def _read_artifact(args: dict, context: ToolContext) -> str:
    if args.get("artifact_id") is None:
        query = args.get("query", "")
        try:
            rows = artifacts.artifacts_list(query, within=_readable_artifacts(context))[:ARTIFACT_LIST_LIMIT]
        except ServiceError as exc:
            raise ToolInputError(exc.detail) from exc
        listed = [
            {"artifact_id": a.pk, "title": a.title, "kind": a.kind, "versions": a.version_count,
             "updated": a.updated_at.date().isoformat()}
            for a in rows
        ]
        return json.dumps({"artifacts": listed}, ensure_ascii=False)
    artifact_id = int_arg(args, "artifact_id", -1, 1)
    number = int_arg(args, "version", 0, 1) if "version" in args else None
    try:
        artifact = artifacts.access_artifact(artifact_id, within=_readable_artifacts(context))
    except ServiceError as exc:
        raise ToolInputError(exc.detail) from exc
    version = artifacts.artifact_version(artifact, number)
    if version is None:
        raise ToolInputError(f"artifact {artifact_id} has versions 1 to {artifact.version_count}.")
    return json.dumps(
        {"artifact_id": artifact.pk, "title": artifact.title, "kind": artifact.kind, "version": version.number,
         "versions": artifact.version_count, "content": version.content},
        ensure_ascii=False,
    )


def _propose_memory(args: dict, context: ToolContext) -> str:
    try:
        return memory_tool.propose_memory(
            args, conversation_id=context.conversation_id, reply_id=context.message_id, call_id=context.call_id
        )
    except ServiceError as exc:
        raise ToolInputError(exc.detail) from exc


# A tool's function: the call's arguments and context in, the result the model reads out; bad arguments raise
# ToolInputError.
ToolFunction = Callable[[dict, ToolContext], str]


@dataclass(frozen=True)
class Tool:
    """A function tool the model may call: its name and the function that carries out a call.

    `definition`: the definition offered for it, for a tool whose definition reads its app's rules (its
    limits and choices), offered by `tool_offer.available_tools` from here; None for a tool whose neutral
    definition `tool_offer` holds itself."""

    name: str
    run: ToolFunction
    definition: dict | None = None


# The table of tools a call may name: this app's own, and those the apps that own the rest add from their
# `AppConfig.ready` (`tools_add`). Tests (tests/conversations/sending/test_tool_table.py) hold it to the list.
TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool("search_past_conversations", _search_past_conversations),
        Tool("create_artifact", _create_artifact),
        Tool("update_artifact", _update_artifact),
        Tool("read_artifact", _read_artifact),
        Tool("propose_memory", _propose_memory),
    )
}


def tools_add(tools: Iterable[Tool]) -> None:
    """Add an app's tools to the table. Adding the same tool again adds nothing (an app config made ready
    twice); a second, different tool of a name already held is a mistake, raised at start-up."""
    for tool in tools:
        held = TOOLS.setdefault(tool.name, tool)
        if held is not tool:
            raise ImproperlyConfigured(f"Two tools are named {tool.name!r}: {held.run.__module__} and {tool.run.__module__}.")


def run_tool(call: ToolCallRequested, *, offered: list[dict], context: ToolContext) -> ToolResult:
    """Run one call. Every failure is a result the model reads, never an exception."""
    offered_names = {tool["name"] for tool in offered if "name" in tool}
    tool = TOOLS.get(call.name)
    if tool is None or call.name not in offered_names:
        available = ", ".join(sorted(offered_names)) or "none"
        return ToolResult(f"Tool error: there is no tool named {call.name!r} here. Available: {available}.", True)
    try:
        args = json.loads(call.arguments_json or "{}")
        if not isinstance(args, dict):
            raise ToolInputError("arguments must be a JSON object.")
        content = tool.run(args, replace(context, call_id=call.call_id))
    except json.JSONDecodeError:
        return ToolResult("Tool error: the arguments are not valid JSON.", True)
    except ToolInputError as exc:
        return ToolResult(f"Tool error: {exc}", True)
    except Exception:  # noqa: BLE001 - a broken tool must not break the reply; the model hears about it
        logger.exception("tool %s failed", call.name)
        return ToolResult(f"Tool error: {call.name} failed inside the app; try something else.", True)
    if len(content) > RESULT_MAX_CHARACTERS:
        content = content[:RESULT_MAX_CHARACTERS] + " …[result cut at the size limit]"
    return ToolResult(content)


# --- Durable parts and their projection ---------------------------------------------


def call_part(call: ToolCallRequested, round_number: int) -> dict:
    """A call as stored; a Responses `function_call` keeps its item id (`item_id`) to go back with it."""
    part = {
        "type": "tool_call",
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments_json,
        "round": round_number,
    }
    return {**part, "item_id": call.item_id} if call.item_id else part


def result_part(call_id: str, result: ToolResult) -> dict:
    return {"type": "tool_result", "call_id": call_id, "content": result.content, "is_error": result.is_error}


def _save_parts(message_id: UUID, parts: list[dict]) -> None:
    Message.objects.filter(pk=message_id).update(parts=parts, updated_at=timezone.now())


# A tool the reply's event loop carries out itself (it calls the provider): the call, its context (with
# the call's id), and the reply's `emit`; it answers a ToolResult and never raises.
AsyncTool = Callable[[ToolCallRequested, ToolContext, Callable[[str, dict], None]], Awaitable[ToolResult]]


async def tool_round_run(
    calls: list[ToolCallRequested], *, round_number: int, message_id: UUID, parts: list[dict],
    offered: list[dict], context: ToolContext, emit: Callable[[str, dict], None],
    persist: Callable[[Callable], Callable[..., Awaitable]], async_tools: Mapping[str, AsyncTool] | None = None,
) -> None:
    """Run one round's calls in order, storing each call, then its result, as it happens.

    `parts` (the message's stored parts) is extended in place. `persist` runs
    a database function off the event loop the way the reply's other writes
    run (send_pipeline.persist). `async_tools`: tools run on the event loop
    (`generate_image`), each only when it was offered.
    """
    offered_names = {tool["name"] for tool in offered if "name" in tool}
    for call in calls:
        parts.append(call_part(call, round_number))
        await persist(_save_parts)(message_id, list(parts))
        emit("tool", {"name": call.name, "status": "running"})
        runner = (async_tools or {}).get(call.name) if call.name in offered_names else None
        if runner is not None:
            result = await runner(call, replace(context, call_id=call.call_id), emit)
        else:
            result = await persist(run_tool)(call, offered=offered, context=context)
        parts.append(result_part(call.call_id, result))
        await persist(_save_parts)(message_id, list(parts))
        emit("tool", {"name": call.name, "status": "error" if result.is_error else "done"})
