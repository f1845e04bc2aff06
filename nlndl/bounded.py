"""Work with a ceiling on time and memory: a call run in a forked child process, stopped where it passes either.

An engine's grounding (clingo's) cannot be interrupted from Python: a program whose ground instances run
into the billions holds the process past any time limit and past Ctrl-C or SIGTERM, whose handlers run only
between Python's own steps. In a child it can be stopped, and what it held is freed at once.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from nlndl.compiler.diagnostics import size_text

T = TypeVar("T")
POLL = 0.05  # seconds between two looks at the child's clock and memory


class Unfinished(RuntimeError):
    """The call was stopped at its ceiling; the message says which ceiling and where it stood, and ``timed``
    whether it was the time's (a longer allowance may let it finish)."""

    def __init__(self, message: str, timed: bool = False) -> None:
        super().__init__(message)
        self.timed = timed


def forks() -> bool:
    """Whether calls can be bounded here: a fork and the child's memory in /proc (Linux)."""
    return hasattr(os, "fork") and os.path.exists(f"/proc/{os.getpid()}/statm")


def bounded(call: Callable[[], T], seconds: float | None, memory: int | None) -> T:
    """``call()``'s value, computed in a forked child that is stopped once it has run ``seconds`` or grown by
    ``memory`` bytes beyond the parent's pages it shares (None: no such ceiling): then :class:`Unfinished`. An
    exception of the call is raised here; an interrupt here (Ctrl-C, SIGTERM) stops the child first. Where
    processes cannot fork, the call runs here, unbounded."""
    if not forks() or (seconds is None and memory is None):
        return call()
    for stream in (sys.stdout, sys.stderr):  # what is buffered is written once, by this process
        stream.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, and leave without the parent's exit handlers, whatever happens
        try:
            os.close(read)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                payload = pickle.dumps((True, call()), protocol=pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # noqa: BLE001 (every failure is the parent's to raise)
                try:
                    payload = pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # noqa: BLE001 (an exception that does not pickle goes as its text)
                    payload = pickle.dumps((False, RuntimeError(repr(exc))), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write, "wb") as out:
                out.write(payload)
        finally:
            os._exit(0)
    os.close(write)
    try:
        chunks = _collect(pid, read, seconds, memory)
    finally:
        os.close(read)
        _stop(pid)
    if not chunks:  # killed from outside (the kernel's out-of-memory killer) before it answered
        raise Unfinished("ended without an answer")
    ok, value = pickle.loads(b"".join(chunks))
    if not ok:
        raise value
    return value


def _collect(pid: int, read: int, seconds: float | None, memory: int | None) -> list[bytes]:
    """The child's whole answer, read as it comes; :class:`Unfinished` at a ceiling."""
    started = time.perf_counter()
    base = resident(pid)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([read], [], [], POLL)
        if ready:
            chunk = os.read(read, 1 << 20)
            if not chunk:
                return chunks
            chunks.append(chunk)
            continue
        spent = time.perf_counter() - started
        if seconds is not None and spent > seconds:
            raise Unfinished(f"stopped after {spent:.0f} s", timed=True)
        grown = resident(pid) - base
        if memory is not None and grown > memory:
            raise Unfinished(f"stopped at {size_text(grown)} after {spent:.0f} s, past {size_text(memory)}")


def resident(pid: int) -> int:
    """Bytes of a process's resident pages (Linux); 0 where they cannot be read or it has gone."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def _stop(pid: int) -> None:
    """The child killed (if it still runs) and reaped."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
