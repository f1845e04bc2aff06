"""Progress reporting for long runs: a rich bar on a terminal, silence otherwise or with --quiet."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

stderr = Console(stderr=True)


@contextmanager
def progress_bar(total: int, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """Yield ``tell(label)``: call it before each of ``total`` units of work."""
    if quiet or not sys.stderr.isatty():
        yield lambda _label: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=stderr, transient=True) as bar:
        task = bar.add_task("starting", total=total)
        started = False

        def tell(label: str) -> None:
            nonlocal started
            if started:
                bar.advance(task)
            started = True
            bar.update(task, description=label)

        yield tell


@contextmanager
def training_bar(total: int, restarts: int, quiet: bool = False) -> Iterator[Callable]:
    """Yield ``progress(state, losses)`` for the trainer: iteration, best loss, restarts replaced."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=stderr, transient=True) as bar:
        task = bar.add_task("training", total=total)

        def progress(state, losses) -> None:
            if state.iteration % 10 == 0:
                bar.update(
                    task,
                    completed=state.iteration,
                    description=(
                        f"iter {state.iteration}  best loss {state.best_loss:.4f}  {restarts} restarts "
                        f"({state.replaced} replaced, {state.renewed} renewed)"
                    ),
                )

        yield progress


@contextmanager
def status_line(quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """Yield ``tell(label)`` showing the latest step of a long job on one live line (terminal only)."""
    if quiet or not sys.stderr.isatty():
        yield lambda _label: None
        return
    with stderr.status("starting") as status:
        yield lambda label: status.update(label)
