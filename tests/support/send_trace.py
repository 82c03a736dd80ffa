"""Following one send through the project's modules: how straight its path is (tests/architecture/test_send_path.py).

A profiler (`sys.setprofile`, in every thread the send runs in) watches the
project's own frames (the `root_packages` of `.importlinter`; not tests/, not
.venv, not migrations) from the first call of `send_prepare` to the first call of the
openai SDK's `create` (the provider call). Code outside the project (Django,
asyncio, the SDK) is transparent: the send "is in" the module of the innermost
project frame. Once the reply's own task exists, only it (and the threads it
hands work to) is followed: the response's plumbing (middleware wrapping the
stream) runs beside it in the request's task, in an order the event loop picks.
From the modules the send is in, one after another:

- modules: how many different modules the send visits;
- stops: how many stays in a module (a visit to a module, until the send is in another one);
- returns: stops in a module the send had already been in and left (the maze figure);
- climbs: calls from a module into a module of a higher layer of `.importlinter` (a lower layer calling
  back up, through a callback: imports never go that way);
- re-entries: calls into a module that is already further down the stack under another module (a callback
  handed down, such as a lambda called from the module that was given it).

Standalone (standard library only, reads `.importlinter` itself), so the same
file measures an older tree: copy it there and run the same test.
"""

from __future__ import annotations

import asyncio
import configparser
import contextvars
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START_FUNCTION = "send_prepare"
PROVIDER_PACKAGE = "openai"
PROVIDER_CALL = "create"
# Set in the reply's own task (and so in the threads it hands work to): see `SendTracer._in_the_send`.
_IN_REPLY: contextvars.ContextVar[bool] = contextvars.ContextVar("send_trace_in_reply", default=False)


def contract_layers(root: Path = ROOT) -> tuple[tuple[str, ...], list[list[str]]]:
    """The root packages and the layers (top first) of the tree's `.importlinter`."""
    config = configparser.ConfigParser()
    config.read(root / ".importlinter")
    packages = tuple(config["importlinter"]["root_packages"].split())
    layers = [
        [name.strip() for name in line.replace("|", ":").split(":") if name.strip()]
        for line in config["importlinter:contract:layers"]["layers"].strip().splitlines()
    ]
    return packages, layers


@dataclass
class SendPath:
    """The modules one send was in, in order (a module once per stop), and its climbs."""

    stops_in: list[str] = field(default_factory=list)
    climbs: list[tuple[str, str]] = field(default_factory=list)
    reentries: list[tuple[str, str]] = field(default_factory=list)

    @property
    def modules(self) -> int:
        return len(set(self.stops_in))

    @property
    def stops(self) -> int:
        return len(self.stops_in)

    @property
    def returns(self) -> int:
        seen: set[str] = set()
        count = 0
        for module in self.stops_in:
            count += module in seen
            seen.add(module)
        return count

    def figures(self) -> dict[str, int]:
        return {
            "modules": self.modules,
            "stops": self.stops,
            "returns": self.returns,
            "climbs": len(self.climbs),
            "reentries": len(self.reentries),
        }

    def report(self) -> str:
        lines = [" ".join(f"{name}={value}" for name, value in self.figures().items())]
        lines += [f"  {index:3} {module}" for index, module in enumerate(self.stops_in)]
        lines += [f"  climb {caller} -> {callee}" for caller, callee in self.climbs]
        lines += [f"  re-entry {caller} -> {callee}" for caller, callee in self.reentries]
        return "\n".join(lines)


class SendTracer:
    """A profiler that records one send's `SendPath`; `install()` in each thread the send may run in."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self.packages, layers = contract_layers(root)
        self.layer_of_name = {name: index for index, layer in enumerate(layers) for name in layer}
        self.path = SendPath()
        self.started = False
        self.finished = False
        self.request_task: asyncio.Task | None = None
        self.reply_started = False
        self._modules: dict[str, str | None] = {}
        self._lock = threading.Lock()

    # --- Which module a frame is in, and its layer ---------------------------------------

    def module_of(self, filename: str) -> str | None:
        if filename not in self._modules:
            self._modules[filename] = self._module_name(filename)
        return self._modules[filename]

    def _module_name(self, filename: str) -> str | None:
        try:
            relative = Path(filename).resolve().relative_to(self.root)
        except ValueError:
            return None
        parts = relative.with_suffix("").parts
        if not parts or parts[0] not in self.packages or "migrations" in parts or relative.suffix != ".py":
            return None
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def layer(self, module: str) -> int | None:
        """The layer index (0 is the top), by the longest contract name that holds the module."""
        name = module
        while name:
            if name in self.layer_of_name:
                return self.layer_of_name[name]
            name = name.rpartition(".")[0]
        return None

    def _innermost(self, frame) -> str | None:
        return next(self._stack_modules(frame), None)

    def _stack_modules(self, frame):
        """The project modules of `frame` and its callers, innermost first."""
        while frame is not None:
            module = self.module_of(frame.f_code.co_filename)
            if module is not None:
                yield module
            frame = frame.f_back

    # --- The profiler --------------------------------------------------------------------

    def install(self) -> None:
        sys.setprofile(self.profile)

    def _in_the_send(self) -> bool:
        """Everything until the reply's task (the first task running a project coroutine) exists; from then
        on only that task and the threads it hands work to."""
        task = _current_task()
        if task is None:
            return not self.reply_started or _IN_REPLY.get()
        if task is not self.request_task and not _IN_REPLY.get() and self._runs_ours(task):
            _IN_REPLY.set(True)  # in the reply's task's own context, which its threads copy
            self.reply_started = True
        elif not self.reply_started:
            # The reply's task exists: the request's task(s) started it and go on to the response.
            self.reply_started = any(self._runs_ours(other) for other in asyncio.all_tasks() if other is not task)
        return not self.reply_started or _IN_REPLY.get()

    def _runs_ours(self, task: asyncio.Task) -> bool:
        """Whether a task runs one of the project's coroutines (the reply's), not one of Django's or asyncio's."""
        code = getattr(task.get_coro(), "cr_code", None)
        return code is not None and self.module_of(code.co_filename) is not None

    def profile(self, frame, event: str, _arg: object) -> None:
        if self.finished or event not in ("call", "return"):
            return
        if self._is_the_provider_call(frame, event):
            self.finished = True
            return
        module = self.module_of(frame.f_code.co_filename)
        if event == "call" and not self.started:
            if module is None or frame.f_code.co_name != START_FUNCTION:
                return
            self.started = True
        if not self.started or not self._in_the_send():
            return
        with self._lock:
            if event == "call":
                if module is None:
                    return
                caller = self._innermost(frame.f_back)
                self._climb(caller, module)
                self._reentry(frame, caller, module)
                self._enter(module)
            else:
                # Returning: the send is back in the innermost project frame of the caller.
                self._enter(self._innermost(frame.f_back))

    def _is_the_provider_call(self, frame, event: str) -> bool:
        return (
            self.started
            and event == "call"
            and frame.f_code.co_name == PROVIDER_CALL
            and PROVIDER_PACKAGE in Path(frame.f_code.co_filename).parts
        )

    def _climb(self, caller: str | None, callee: str) -> None:
        if caller is None or caller == callee:
            return
        caller_layer, callee_layer = self.layer(caller), self.layer(callee)
        if caller_layer is not None and callee_layer is not None and callee_layer < caller_layer:
            self.path.climbs.append((caller, callee))

    def _reentry(self, frame, caller: str | None, callee: str) -> None:
        if caller is None or caller == callee:
            return
        if callee in self._stack_modules(frame.f_back):
            self.path.reentries.append((caller, callee))

    def _enter(self, module: str | None) -> None:
        if module is None:
            return
        if not self.path.stops_in or self.path.stops_in[-1] != module:
            self.path.stops_in.append(module)


def _current_task() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # a thread without an event loop
        return None


def trace_in_every_thread(tracer: SendTracer) -> None:
    """Profile this thread and every thread started from now on; called in the task that sends."""
    tracer.request_task = _current_task()
    threading.setprofile(tracer.profile)
    tracer.install()


def trace_stop() -> None:
    threading.setprofile(None)
    sys.setprofile(None)
