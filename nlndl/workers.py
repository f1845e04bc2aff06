"""A graph's relations learned at once by worker processes on one machine, one relation per worker at a time.

Every relation is learned with one torch thread, in a worker or in the calling process alike, so that what is
learned for a relation does not depend on how many workers there are: on two cores two relations learned side
by side, a thread each, finish sooner than one after the other with two threads each (the tensors of a
relation are too small to keep two threads busy). Workers are started fresh (``spawn``: a forked torch can
hang in its thread pool) and each reads the graph once; a worker ignores Ctrl-C, which the caller handles by
ending them all.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from nlndl.errors import JobError


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def physical_memory() -> int:
    """Bytes of memory the machine has (0 where unknown)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def worker_count(jobs: int, relations: int, train_memory: int) -> int:
    """Workers for ``relations`` relations: ``jobs``, or with 0 as many as there are cores, never more than
    there are relations nor than the machine's memory holds at ``train_memory`` bytes each."""
    wanted = jobs or cores()
    memory = physical_memory()
    if not jobs and memory and train_memory:
        wanted = min(wanted, max(1, memory // train_memory))
    return max(1, min(wanted, relations))


@contextmanager
def one_thread() -> Iterator[None]:
    """torch computes with one thread inside the block (the thread count as it was restored after)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_graph: Any = None  # a worker's graph, read once by _start (or the error reading it raised)


def _start(read: Callable[[Path, int], Any], directory: Path, memory_limit: int) -> None:
    global _graph
    import torch

    from nlndl.allocator import collect_less, keep_freed_memory

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_freed_memory()  # a worker owns its process, as the CLI does (nlndl.allocator)
    collect_less()
    torch.set_num_threads(1)
    try:
        _graph = read(directory, memory_limit)
    except Exception as exc:  # raised by the first task, with its message: a failed start only breaks the pool
        _graph = exc


def _work(
    work: Callable[..., Any], directory: Path, target: str, config: Any, extra: tuple[Any, ...]
) -> tuple[str, Any]:
    if isinstance(_graph, Exception):
        raise _graph
    return target, work(directory, _graph, target, config, *extra)


@contextmanager
def main_left_behind() -> Iterator[None]:
    """Processes spawned inside the block do not import the caller's main module. multiprocessing imports it in
    every spawned process so that the process may unpickle functions defined there; a worker runs nlndl's own
    module-level functions only, and a script of the user's imported again in each worker would run its calls
    to nlndl again there (unless they stand under ``if __name__ == "__main__":``) and start workers from its
    workers. multiprocessing reads the main module's ``__spec__`` and ``__file__`` as it starts a process;
    both are hidden for the block and put back."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    hidden = {name: main.__dict__[name] for name in ("__spec__", "__file__") if name in main.__dict__}
    main.__spec__ = None
    main.__dict__.pop("__file__", None)
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(hidden)


class _Spawned(multiprocessing.context.SpawnProcess):
    """A spawned process that starts without the caller's main module (:func:`main_left_behind`)."""

    def start(self) -> None:
        with main_left_behind():
            super().start()


class _SpawnContext(multiprocessing.context.SpawnContext):
    Process = _Spawned


def spawn_context() -> multiprocessing.context.SpawnContext:
    """The start method of nlndl's worker pools: ``spawn`` (a forked torch can hang in its thread pool), each
    process started without the caller's main module, whenever the pool starts it."""
    return _SpawnContext()


def each_relation(
    read: Callable[[Path, int], Any],
    work: Callable[..., Any],
    directory: Path,
    graph: Any,
    targets: list[str],
    config: Any,
    workers: int,
    started: Callable[[str], None],
    finished: Callable[[Any], None],
    extra: dict[str, tuple[Any, ...]] | None = None,
    doing: str = "learning",
    here: Callable[[], AbstractContextManager] = one_thread,
) -> dict[str, Any]:
    """Each of ``targets`` done with ``work(directory, graph, target, config, *extra[target])`` (``extra``:
    further arguments per target, none by default), by ``workers`` processes in the given order as they come
    free, or with one worker in this process on ``graph`` (already read) inside ``here()``: one torch thread by
    default, as in a worker, so that the result does not depend on the number of workers. A worker reads the
    graph once, ``read(directory, config.memory_limit)``; ``read`` and ``work`` are module-level functions,
    which a worker imports. ``started`` is told each relation as it is handed out, ``finished`` each one done,
    as it arrives. The first error raised is raised here (JobError for a worker that died, say killed for
    memory, naming what it was ``doing`` with which relation), and every worker is ended."""
    out: dict[str, Any] = {}
    if workers <= 1:
        with here():
            for target in targets:
                started(target)
                out[target] = work(directory, graph, target, config, *(extra or {}).get(target, ()))
                finished(out[target])
        return out
    pool = ProcessPoolExecutor(
        workers,
        mp_context=spawn_context(),
        initializer=_start,
        initargs=(read, directory, config.memory_limit),
    )
    running: dict[Future, str] = {}
    waiting = list(targets)

    def hand_out() -> None:
        target = waiting.pop(0)
        started(target)
        running[pool.submit(_work, work, directory, target, config, (extra or {}).get(target, ()))] = target

    try:
        for _ in range(min(workers, len(waiting))):
            hand_out()
        while running:
            done, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: targets.index(running[f])):
                target = running.pop(future)
                try:
                    _, learned = future.result()
                except BrokenProcessPool:
                    raise JobError(
                        f"{directory}: error: the worker process {doing} relation {target!r} ended without a "
                        "result (killed, perhaps for lack of memory); try --jobs 1, or a lower --memory-limit"
                    ) from None
                out[target] = learned
                finished(learned)
                if waiting:
                    hand_out()
    finally:
        if running:  # stopped early (an error, Ctrl-C): end the workers rather than wait for them
            processes = getattr(pool, "_processes", None) or {}  # the executor's own: it has no terminate()
            for process in list(processes.values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
    return out
