"""Progress reporting for long runs: a rich bar on a terminal; off a terminal (a log file) a bench prints
one line per unit of work and a training run one line every 30 s; --quiet silences both."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from nlndl.defaults import SLOW_HINT

stderr = Console(stderr=True)
LOG_EVERY = 30.0  # seconds between a training run's progress lines off a terminal


def clock(seconds: float) -> str:
    """A duration for a progress line: seconds under ten minutes, else minutes."""
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:.0f} min"


@contextmanager
def progress_bar(total: int, quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """Yield ``tell(label)``: call it before each of ``total`` units of work; the time left is estimated from
    the units done (off a terminal, each line says it once one is done)."""
    if quiet:
        yield lambda _label: None
        return
    if not sys.stderr.isatty():
        started, count = time.perf_counter(), 0

        def line(label: str) -> None:
            nonlocal count
            elapsed = time.perf_counter() - started
            left = f", about {elapsed / count * (total - count):.0f} s left" if count and total > count else ""
            count += 1
            print(f"[{count}/{total} {elapsed:7.1f} s{left}] {label}", file=sys.stderr, flush=True)

        yield line
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    columns += (TextColumn("left"), TimeRemainingColumn())
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
def training_bar(
    total: int, restarts: int, quiet: bool = False, time_limit: float | None = None, faster: str | None = None
) -> Iterator[Callable]:
    """Yield ``progress(state, losses)`` for the trainer: iteration, best loss, restarts replaced (off a
    terminal, a line every ``LOG_EVERY`` seconds, with the time left at its pace). The bar fills by whichever limit is
    nearer, ``total`` iterations or ``time_limit`` seconds. Its ``say(text)`` prints an event of the run (a
    grown subgraph) as a line of its own, off a terminal with the time since training started. ``faster``: an
    option that would make the run faster, said once if after ``LOG_EVERY`` seconds the pace so far would take
    the run past ``SLOW_HINT`` seconds."""
    if quiet:
        yield None
        return
    started = time.perf_counter()
    hinted = faster is None

    def most(state) -> float:
        """Seconds the run would take at its pace so far, to its iteration limit or its time limit."""
        whole = state.seconds / max(state.iteration, 1) * total
        return min(whole, time_limit) if time_limit else whole

    def hint(state, say: Callable[[str], None]) -> None:
        nonlocal hinted
        if hinted or state.seconds < LOG_EVERY or not state.iteration:
            return
        hinted = True
        if most(state) > SLOW_HINT:
            pace = state.seconds / state.iteration
            say(
                f"hint: at {pace:.2f} s an iteration on the whole world, the run takes up to {clock(most(state))}; "
                f"{faster}"
            )

    def describe(state, of: str = "") -> str:
        return (
            f"iter {state.iteration}{of}  best loss {state.best_loss:.4f}  {restarts} restarts "
            f"({state.replaced} replaced, {state.renewed} renewed)"
        )

    def done(state) -> float:
        """The share of the run spent: of its iterations or of its time limit, the larger."""
        spent = state.iteration / total
        return max(spent, state.seconds / time_limit) if time_limit else spent

    if not sys.stderr.isatty():
        last = 0.0
        limit = f", at most {time_limit:g} s" if time_limit else ""

        def say(text: str) -> None:
            print(f"[{time.perf_counter() - started:7.1f} s] {text}", file=sys.stderr, flush=True)

        def log(state, losses) -> None:
            nonlocal last
            if state.seconds - last >= LOG_EVERY:
                last = state.seconds
                left = max(most(state) - state.seconds, 0.0)
                print(
                    f"[{state.seconds:7.1f} s] {describe(state, f'/{total}{limit}')}  {clock(left)} left at this pace",
                    file=sys.stderr,
                    flush=True,
                )
                hint(state, say)

        log.say = say
        yield log
        return
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), TimeElapsedColumn())
    with Progress(*columns, console=stderr, transient=True) as bar:
        task = bar.add_task("training", total=1.0)

        def say(text: str) -> None:
            bar.console.print(text, highlight=False, markup=False, soft_wrap=True)

        def progress(state, losses) -> None:
            if state.iteration % 10 == 0:
                bar.update(task, completed=min(done(state), 1.0), description=describe(state))
                hint(state, say)

        progress.say = say
        yield progress


@contextmanager
def status_line(quiet: bool = False) -> Iterator[Callable[[str], None]]:
    """Yield ``tell(label)`` showing the latest step of a long job on one live line; off a terminal (a log), the
    first label and then one every ``LOG_EVERY`` seconds, each a line with the time since the start."""
    if quiet:
        yield lambda _label: None
        return
    if not sys.stderr.isatty():
        started, last = time.perf_counter(), None

        def line(label: str) -> None:
            nonlocal last
            now = time.perf_counter()
            if last is None or now - last >= LOG_EVERY:
                last = now
                print(f"[{now - started:7.1f} s] {label}", file=sys.stderr, flush=True)

        yield line
        return
    with stderr.status("starting") as status:
        yield lambda label: status.update(label)
