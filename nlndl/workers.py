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
import queue
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


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

    from nlndl.allocator import keep_freed_memory

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_freed_memory()  # a worker owns its process, as the CLI does (nlndl.allocator)
    torch.set_num_threads(1)
    try:
        _graph = read(directory, memory_limit)
    except Exception as exc:  # raised by the first task instead: a pool replaces a worker whose start fails
        _graph = exc


def _learn(learn: Callable[..., Any], directory: Path, target: str, config: Any) -> tuple[str, Any]:
    if isinstance(_graph, Exception):
        raise _graph
    return target, learn(directory, _graph, target, config)


def learn_in_workers(
    read: Callable[[Path, int], Any],
    learn: Callable[..., Any],
    directory: Path,
    targets: list[str],
    config: Any,
    workers: int,
    started: Callable[[str], None],
    finished: Callable[[Any], None],
) -> dict[str, Any]:
    """Each of ``targets`` learned by one of ``workers`` processes, in the given order as workers come free:
    each worker reads the graph once, ``read(directory, config.memory_limit)``, and learns a relation with
    ``learn(directory, graph, target, config)`` (both module-level functions, which a worker imports).
    ``started`` is told each relation as it is handed out, ``finished`` each one learned, as it arrives. The
    first error a worker raises is raised here, and every worker ended."""
    context = multiprocessing.get_context("spawn")
    arrived: queue.Queue = queue.Queue()
    pool = context.Pool(workers, initializer=_start, initargs=(read, directory, config.memory_limit))
    out: dict[str, Any] = {}
    try:
        waiting = list(targets)

        def hand_out() -> None:
            target = waiting.pop(0)
            started(target)
            task = (learn, directory, target, config)
            pool.apply_async(_learn, task, callback=arrived.put, error_callback=arrived.put)

        for _ in range(min(workers, len(waiting))):
            hand_out()
        while len(out) < len(targets):
            try:
                got = arrived.get(timeout=0.2)
            except queue.Empty:
                continue
            if isinstance(got, BaseException):
                raise got
            target, learned = got
            out[target] = learned
            finished(learned)
            if waiting:
                hand_out()
    finally:
        pool.terminate()
        pool.join()
    return out
