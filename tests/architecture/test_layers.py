"""The architecture as tests: every module in one layer of `.importlinter`, no import cycle at all,
no function-local import of the project's own code.

`lint-imports` (run by `make lint` and by `make test` before the suite) checks
the contract itself; these tests check what it cannot: that the contract
covers every module (a new module outside every layer would escape it), and
that no cycle hides across apps, where the acyclic-siblings contract does not look.
"""

from __future__ import annotations

import ast
import configparser
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "elion", "operations", "conversations", "continuity", "memories", "archive", "artifacts", "transcript", "check_ins"
)
APPS = ("elion", "conversations", "continuity", "memories", "archive", "artifacts", "check_ins")
# Django's entry points in each app sit above every layer (the `entry-points` contract keeps the layers
# from importing them): admin registrations, management commands, django-q tasks, template tags, the app
# config, plus the settings and the ASGI application.
ENTRY_POINTS = ("admin", "apps", "tasks", "management", "templatetags")
PROJECT_ENTRY_POINTS = ("elion.settings", "elion.asgi")


def _layers() -> list[list[str]]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    raw = config["importlinter:contract:layers"]["layers"]
    layers = []
    for line in raw.strip().splitlines():
        layers.append([name.strip() for name in line.replace("|", ":").split(":") if name.strip()])
    return layers


def _project_modules() -> list[str]:
    modules = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            if "migrations" in relative.parts:
                continue
            parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
            modules.append(".".join(parts))
    return modules


def _is_entry_point(module: str) -> bool:
    parts = module.split(".")
    return module in PROJECT_ENTRY_POINTS or (parts[0] in APPS and len(parts) > 1 and parts[1] in ENTRY_POINTS)


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES)


def _holds_a_docstring_only(module: str) -> bool:
    body = ast.parse((ROOT / module.replace(".", "/") / "__init__.py").read_text()).body
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)


def test_every_module_sits_in_exactly_one_layer():
    layers = _layers()
    assert len(layers) == 6, "web, sending, services, continuity rules, transcript, models and base"
    listed = [name for layer in layers for name in layer]
    assert len(listed) == len(set(listed)), "a package is listed in two layers"
    assert len(listed) <= 30, "the contract names packages, not modules"
    misplaced = []
    for module in _project_modules():
        if _is_entry_point(module):
            continue
        owners = [name for name in listed if module == name or module.startswith(name + ".")]
        if not owners and any(name.startswith(module + ".") for name in listed):
            # A package above the layers (an app, or a folder of layer packages) holds a docstring and no code.
            assert _holds_a_docstring_only(module), module
            continue
        if len(owners) != 1:
            misplaced.append(f"{module} in {owners}")
    assert misplaced == [], "every module in exactly one layer package of .importlinter"


def _imports_both_ways(graph: grimp.ImportGraph, packages: list[str]) -> list[tuple[str, str]]:
    """Pairs of `packages` (neither inside the other) each importing the other, directly, somewhere inside."""
    pairs = []
    for index, first in enumerate(sorted(packages)):
        for second in sorted(packages)[index + 1 :]:
            if second.startswith(first + ".") or first.startswith(second + "."):
                continue
            there = graph.direct_import_exists(importer=first, imported=second, as_packages=True)
            if there and graph.direct_import_exists(importer=second, imported=first, as_packages=True):
                pairs.append((first, second))
    return pairs


def test_no_two_layer_packages_import_each_other_both_ways():
    """The layer packages of `.importlinter` and their direct sub-packages: a piece one side needs lives on
    the side that owns it, so no two of them import each other (the layers contract cannot see two packages
    of one layer doing it)."""
    graph = _graph()
    packages = set()
    for layer in _layers():
        for name in layer:
            packages.add(name)
            packages.update(child for child in graph.find_children(name) if graph.find_children(child))
    assert _imports_both_ways(graph, sorted(packages)) == []


# Top-level packages that still import each other both ways (13 before issue 45, 4 after it: the transcript's
# rows moved to the `transcript` app, so `transcript` imports no app above it; the lock, the settings reader and
# upload reading left it; each app deletes its own rows of a conversation deleted forever; markdown rendering
# and the error shape's serializer sit in `elion.base`, so `artifacts` needs nothing of `conversations`; the send's
# tools are a table (`conversations.sending.tool_loop.TOOLS`) to which `archive` and `check_ins` add their own from
# `AppConfig.ready`, so `conversations` imports neither; the conversation's API shape sits in
# `continuity.web.conversation_shape`, so `memories` needs nothing of `conversations`; the owner's settings rows
# (assistant settings, characters, audio usage) are `elion.models`, so `operations` and continuity's stores read
# nothing of `conversations`). What remains, by the imports behind it:
# - `elion` is both the project's top (`elion.web`: the URL root and routing to the chat's consumer, the health
#   check, which reads `continuity.services.health` and the settings row; `elion.admin`, whose settings and
#   characters pages write through `conversations.services`) and its base (`elion.base`, `elion.models`);
# - continuity's stored prompt reads memories (`continuity.rules.prompt_store`), while memories' services call
#   continuity's rules (archive's documents reach the prompt through the reader `archive.apps` registers,
#   `continuity.rules.archive_handoff_store.archived_turns_reader_register`, so `continuity` imports nothing of
#   `archive`);
# - continuity's branching creates a thread (`continuity.services.branching` ->
#   `conversations.services.threads.thread_writes`), while the send and the conversations services call
#   continuity's rules.
# The list may only shrink.
TOP_LEVEL_BOTH_WAYS = {
    ("continuity", "conversations"), ("continuity", "elion"), ("continuity", "memories"),
    ("conversations", "elion"),
}


def test_top_level_packages_importing_each_other_both_ways_only_shrink():
    assert set(_imports_both_ways(_graph(), list(PACKAGES))) <= TOP_LEVEL_BOTH_WAYS


def test_the_module_graph_has_no_import_cycle():
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(start: str) -> None:
        # Iterative Tarjan: strongly connected components of more than one module are cycles.
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.find_modules_directly_imported_by(child)))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []


def test_no_function_local_import_of_the_projects_own_code_without_a_reason():
    """A function-local import of our own modules hides a cycle; one Django needs says why (`# local import: …`)."""
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            source = path.read_text()
            lines = source.splitlines()
            for node in ast.walk(ast.parse(source)):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom) and inner.module and inner.module.split(".")[0] in PACKAGES:
                        reason = lines[inner.lineno - 2].strip()
                        if not reason.startswith("# local import:"):
                            offenders.append(f"{path.relative_to(ROOT)}:{inner.lineno} {inner.module}")
    assert offenders == []
