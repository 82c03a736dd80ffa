"""Running two writers against each other at a chosen point: a gate, a paused run, two at once."""

from __future__ import annotations

import random
import threading
import time

from django.db import connections

from continuity.rules import prompt_store, refresh_triggers
from tests.support.concurrency import marks_lock_wait, wait_until_blocked_on_lock


def run_together(operations, *, jitter: float = 0.004) -> list[BaseException]:
    """Start every operation at once, each in its own thread and connection."""
    barrier = threading.Barrier(len(operations))
    errors: list[BaseException] = []

    def run(operation):
        try:
            barrier.wait()
            time.sleep(random.uniform(0, jitter))
            operation()
        except BaseException as exc:  # noqa: BLE001 - collected and judged by the caller
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(operation,)) for operation in operations]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), "an operation hung (deadlock?)"
    return errors


class Gate:
    """Pauses the first prompt build in a chosen thread until released."""

    def __init__(self):
        self.reached = threading.Event()
        self.release = threading.Event()
        self.thread_name: str | None = None

    def install(self, monkeypatch):
        real = prompt_store.build_static_prompt

        def gated(inputs):
            if threading.current_thread().name == self.thread_name and not self.reached.is_set():
                self.reached.set()
                assert self.release.wait(timeout=30)
            return real(inputs)

        monkeypatch.setattr(prompt_store, "build_static_prompt", gated)


class MarkGate(Gate):
    """Pauses an operation right after it marked prompts stale, inside its transaction with its locks held
    (`continuity.rules.prompt_refresh`: the refresh's first step), until released."""

    def install(self, monkeypatch):
        real = refresh_triggers.static_prompts_mark_stale

        def gated(conversations):
            real(conversations)
            if threading.current_thread().name == self.thread_name and not self.reached.is_set():
                self.reached.set()
                assert self.release.wait(timeout=30)

        monkeypatch.setattr(refresh_triggers, "static_prompts_mark_stale", gated)


def run_paused(gate: Gate, first, second, *, second_waits: bool = True) -> list[BaseException]:
    """Run `first` until it is mid-build (inputs read, prompt not yet written,
    its locks held), start `second`, wait until it is blocked on `first`'s lock, then let `first` finish.

    `second_waits=False`: `first` holds no lock where it is paused (a refresh batch reads and builds holding
    none), so `second` runs to its end before `first` is released."""
    errors: list[BaseException] = []

    def run(operation):
        try:
            operation()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    def racing() -> None:
        with marks_lock_wait(reached):
            second()

    gate.thread_name = "paused-op"
    reached = threading.Event()
    paused = threading.Thread(target=run, args=(first,), name="paused-op")
    paused.start()
    assert gate.reached.wait(timeout=30)
    other = threading.Thread(target=run, args=(racing if second_waits else second,), name="racing-op")
    other.start()
    if second_waits:
        # Released only once the racing side waits for the paused side's lock.
        wait_until_blocked_on_lock(reached)
    else:
        other.join(timeout=60)
        assert not other.is_alive(), "the racing operation waited for a paused side that holds no lock"
    gate.release.set()
    paused.join(timeout=60)
    other.join(timeout=60)
    assert not paused.is_alive() and not other.is_alive()
    return errors
