"""The ``nlndl`` command line: one verb per job, each a thin module that reads options, calls the library
(:mod:`nlndl.jobs`, :mod:`nlndl.bench`) and prints.

Exit codes: 0 success, 1 diagnostics or a failed job, 2 usage errors, 3 an internal error (a bug), 130 Ctrl-C,
143 SIGTERM (both after saving the checkpoint).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Annotated

import typer

from nlndl import __version__
from nlndl.allocator import (
    collect_less,
    exit_now,
    keep_freed_memory,
    pause_collector,
    share_cpu,
    skip_final_collection,
)
from nlndl.cli import bench, ilp, kg, ldpc  # noqa: F401  (each module registers its commands)
from nlndl.cli.common import app, stdout
from nlndl.errors import NlndlError, Terminated

__all__ = ["app", "main"]
INTERNAL_ERROR = 3  # exit code of a bug: 0 success, 1 diagnostics or a failed job, 2 usage


def _version(value: bool) -> None:
    if value:
        stdout.print(f"nlndl {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Learn explicit, verifiable Datalog programs with Neural Logic Networks."""
    stop_on_sigterm()  # SIGTERM stops a run as Ctrl-C does: checkpoint saved, then exit 143
    keep_freed_memory()  # this process only: step temporaries reuse heap memory instead of fresh pages
    share_cpu()  # idle OpenMP threads sleep: a busy machine costs a run no more than its share


def stop_on_sigterm() -> None:
    """Raise :class:`Terminated` (a KeyboardInterrupt) on SIGTERM, so that a terminated run stops as on Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handler(signum: int, frame: object) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, handler)


def main() -> None:
    """Entry point of the ``nlndl`` console script: every failure ends in a one-line message and an exit code,
    never a traceback (``NLNDL_TRACEBACK=1`` shows one for an internal error). The process is the command's
    own: the cycle collector runs less often (``train`` pauses it until its imports are done), and the exit
    skips the interpreter's teardown (:mod:`nlndl.allocator`)."""
    if sys.argv[1:2] == ["train"]:
        pause_collector()  # until its imports are done: the training resumes it (nlndl.jobs.ilp: Plan.run)
    else:
        collect_less()
    try:
        _run()
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    skip_final_collection()  # where threads are left, the interpreter's exit runs and need not walk every object
    exit_now(code)


def _run() -> None:
    try:
        app()
    except KeyboardInterrupt as exc:
        typer.echo("interrupted", err=True)
        sys.exit(143 if isinstance(exc, Terminated) else 130)
    except MemoryError:
        typer.echo("error: out of memory (lower --memory-limit so that nlndl refuses such work up front)", err=True)
        sys.exit(1)
    except NlndlError as exc:  # raised outside a command's own handler (typer's callbacks)
        typer.echo(str(exc), err=True)
        sys.exit(1)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        typer.echo(f"{where}error: {exc.strerror or exc}", err=True)
        sys.exit(1)
    except Exception as exc:
        if os.environ.get("NLNDL_TRACEBACK"):
            raise
        typer.echo(
            f"nlndl: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in nlndl; please report it with the command (NLNDL_TRACEBACK=1 shows where it happened).",
            err=True,
        )
        sys.exit(INTERNAL_ERROR)
