"""The table of tools a call may name (`conversations.sending.tool_loop.TOOLS`): the send's own tools, and those
the apps that own the rest add from their `AppConfig.ready`, read once every app is ready (as pytest-django
leaves it)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured

from conversations.sending import tool_loop
from conversations.sending.tool_loop import TOOLS, Tool, ToolContext, run_tool, tools_add
from conversations.sending.tool_offer import available_tools
from transcript.provider.gateway import ToolCallRequested

# The tools the send ran before the table (the `TOOL_FUNCTIONS` dict of tool_loop at 44d0685), by name.
TOOLS_BEFORE_THE_TABLE = {
    "search_past_conversations", "search_archive", "list_library", "read_library_file", "create_artifact",
    "update_artifact", "read_artifact", "propose_memory", "propose_check_in",
}


def _offered_everything(api_selector: str) -> list[dict]:
    return available_tools(
        archive_access=True, web_search=True, api_selector=api_selector, image_generation=True,
        memory_suggestions=True, check_in_proposals=True,
    )


def test_once_every_app_is_ready_the_table_holds_exactly_the_tools_it_held_before():
    assert set(TOOLS) == TOOLS_BEFORE_THE_TABLE
    assert all(tool.name == name for name, tool in TOOLS.items())


# The apps whose `AppConfig.ready` adds tools, and the tools each adds.
TOOLS_ADDED_BY_APP = {
    "archive": {"search_archive", "list_library", "read_library_file"},
    "check_ins": {"propose_check_in"},
}
PROJECT_PACKAGES = (
    "elion", "operations", "conversations", "continuity", "memories", "archive", "artifacts", "transcript", "check_ins"
)


def test_each_app_adds_its_tools_when_it_is_ready(monkeypatch):
    own = {name: tool for name, tool in TOOLS.items() if not any(name in added for added in TOOLS_ADDED_BY_APP.values())}
    monkeypatch.setattr(tool_loop, "TOOLS", dict(own))
    project_apps = [config for config in apps.get_app_configs() if config.name.split(".")[0] in PROJECT_PACKAGES]
    assert set(TOOLS_ADDED_BY_APP) < {config.label for config in project_apps}
    for config in project_apps:
        before = set(tool_loop.TOOLS)
        config.ready()
        added = set(tool_loop.TOOLS) - before
        assert added == TOOLS_ADDED_BY_APP.get(config.label, set()), config.label
        # Each tool an app adds is carried out in that app's own sending layer.
        assert {tool_loop.TOOLS[name].run.__module__ for name in added} <= {f"{config.name}.sending.tools"}
    assert tool_loop.TOOLS == TOOLS


def test_every_function_tool_offered_has_its_entry_and_every_entry_is_offered():
    """`generate_image` (the app's own image tool on `chat.completions`) is the one function tool run outside
    the table: on the reply's event loop (`conversations.sending.images`). The Responses API's built-in tools
    have no name."""
    for api_selector, outside in (("responses", set()), ("chat.completions", {"generate_image"})):
        offered = {tool["name"] for tool in _offered_everything(api_selector) if "name" in tool}
        assert offered - set(TOOLS) == outside
        assert set(TOOLS) <= offered


def test_an_unknown_tool_name_answers_as_before():
    offered = available_tools(archive_access=False, web_search=False, api_selector="responses")
    context = ToolContext(uuid.uuid4(), "elion")
    available = "create_artifact, list_library, read_artifact, read_library_file, search_past_conversations, update_artifact"
    for name in ("launch_rockets", "search_archive", "propose_check_in"):  # unknown, and known but not offered
        result = run_tool(ToolCallRequested("c1", name, json.dumps({"query": "x"})), offered=offered, context=context)
        assert result.is_error
        assert result.content == f"Tool error: there is no tool named {name!r} here. Available: {available}."


def test_adding_a_tool_again_adds_nothing_and_a_second_tool_of_one_name_fails_start_up(monkeypatch):
    monkeypatch.setattr(tool_loop, "TOOLS", dict(TOOLS))
    held = tool_loop.TOOLS["list_library"]
    tools_add([held])
    assert tool_loop.TOOLS == TOOLS
    with pytest.raises(ImproperlyConfigured, match="Two tools are named 'list_library'"):
        tools_add([Tool("list_library", lambda args, context: "{}")])
    assert tool_loop.TOOLS["list_library"] is held
