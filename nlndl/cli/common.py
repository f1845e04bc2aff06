"""What every command module shares: the typer apps, the consoles, the options several verbs take, and the
turning of a library error into a one-line message and an exit code."""

from __future__ import annotations

import functools
import importlib.util
import math
import shlex
import sys
from collections.abc import Callable
from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from typer.core import TyperGroup

from nlndl.defaults import (
    CLASS_WEIGHTS,
    LAYOUTS,
    SUBGRAPH_ENTRIES,
    SUBGRAPH_GRID,
    SUBGRAPH_MIN,
    SUBGRAPH_WORK,
    TRAIN_MEMORY,
)
from nlndl.errors import NlndlError, Terminated
from nlndl.output import OutputDir, check_writable, parse_size, write_json

# what a value stands for in help, by parameter name (typer would show its Python type: <int range>, <str>)
METAVARS = {
    "background": "FILE", "batch": "N", "code_seed": "SEED", "codewords": "N", "decoder_dir": "DIR",
    "device": "DEVICE", "directory": "DATA_DIR", "dnf_steps": "N", "eps": "P,...", "examples": "DIR",
    "fact_dir": "DIR", "generate": "N,DV,DC", "graph": "DIR", "inputs": "N", "iterations": "T", "iters": "N",
    "job_count": "N", "jobs": "N", "json_path": "FILE", "k": "N", "kg": "DATA_DIR", "levels": "FRACTION,...",
    "lr": "RATE", "markdown_path": "FILE", "matrix": "FILE", "max_iters": "N", "memory_limit": "SIZE",
    "negatives": "N", "noise": "FRACTION", "output": "DIR", "output_dir": "DIR", "path_length": "N",
    "plot_path": "FILE", "processes": "N", "query": "'r(h, ?)'", "relations": "RELATION", "repeats": "N",
    "restarts": "N", "results": "FILE", "rules": "FILE", "sample": "N", "seed": "SEED", "seeds": "N",
    "sizes": "N,...", "sketch": "SKETCH", "spec": "FILE", "split": "SPLIT", "steps": "N", "target": "RELATION",
    "tasks": "TASK", "threads": "N", "time_limit": "SECONDS", "validation": "FRACTION", "vars_": "N",
    "xor_init": "SCALE", "xor_steps": "N",
}  # fmt: skip


def with_metavars(params: list) -> list:
    """``params`` as help shows them: a flag bare (it takes no value; typer shows ``<bool>``), a value by what it
    stands for (:data:`METAVARS`: SEED, SECONDS, FILE), a choice by its choices."""
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif param.metavar is None and param.name in METAVARS and not _choice(param):
            param.metavar = METAVARS[param.name]
    return params


def _choice(param) -> bool:  # noqa: ANN001 (a typer parameter)
    """Whether ``param`` takes one of an enumeration's values (help lists them): typer 0.29 keeps the annotation
    (``type_descriptor``), earlier ones make the parameter's type a ``Choice``."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:
        return type(getattr(param, "type", None)).__name__ == "Choice"
    annotation = descriptor.annotation
    for kind in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(kind, type) and issubclass(kind, Enum):
            return True
    return False


class Commands(TyperGroup):
    """A command group whose help, and its commands' help, shows flags (``--help`` among them) bare."""

    def get_params(self, ctx):  # noqa: ANN001, ANN201 (typer's own signature)
        return with_metavars(super().get_params(ctx))

    def get_command(self, ctx, name):  # noqa: ANN001, ANN201
        command = super().get_command(ctx, name)
        if command is not None and not isinstance(command, TyperGroup):
            with_metavars(command.get_params(ctx))
        return command


app = typer.Typer(
    cls=Commands,
    name="nlndl",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Learn explicit, verifiable Datalog programs with Neural Logic Networks.",
    epilog="Exit codes: 0 done (rules solved or accepted); 1 a located error (file:line:col: error: ...) or rules "
    "not solved; 2 a usage error; 3 an internal error (NLNDL_TRACEBACK=1 shows it); 130 Ctrl-C; 143 SIGTERM.",
)
bench_app = typer.Typer(
    cls=Commands, no_args_is_help=True, help="Run the paper's experiments and the performance benchmarks."
)
ldpc_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="LDPC codes over the erasure channel: Tanner graphs, learned and classical decoders.",
)
kg_app = typer.Typer(
    cls=Commands,
    no_args_is_help=True,
    help="Knowledge graphs given as triples: train/valid/test, or Neural LP's layout with facts.txt.",
)
app.add_typer(bench_app, name="bench")
app.add_typer(ldpc_app, name="ldpc")
app.add_typer(kg_app, name="kg")

stdout = Console(width=None if sys.stdout.isatty() else 140)  # tables stay readable in logs and pipes

LayoutKind = StrEnum("LayoutKind", {name: name for name in LAYOUTS})
ClassWeight = StrEnum("ClassWeight", {name: name for name in CLASS_WEIGHTS})
PLOT_FORMATS = (".png", ".svg", ".pdf")


def fail(message: str) -> NoReturn:
    """Print a diagnostic unwrapped (so that file:line:col stays on one line) and exit 1."""
    typer.echo(message, err=True)
    raise typer.Exit(1)


def usage(message: str) -> NoReturn:
    """A usage error: the message, exit 2."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def reported(command: Callable) -> Callable:
    """A command whose library errors (:class:`~nlndl.errors.NlndlError`: CompileError, JobError, OutputError,
    BudgetError, CheckpointError; located messages) end in that message and exit 1, and whose interrupts end in
    "interrupted" and exit 130 (Ctrl-C) or 143 (SIGTERM), where typer would exit 130 from either, silently."""

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except NlndlError as exc:
            fail(str(exc))
        except KeyboardInterrupt as exc:
            typer.echo("interrupted", err=True)
            raise typer.Exit(143 if isinstance(exc, Terminated) else 130) from None

    return run


def finite(value: float | None) -> float | None:
    """A number option's callback: NaN and infinity are refused as usage errors (exit 2), so that no record holds
    a value that JSON cannot carry."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a finite number")
    return value


def size_option(text: str, option: str = "--memory-limit") -> int:
    """A size option in bytes (exit 2 when it cannot be read)."""
    try:
        return parse_size(text)
    except ValueError as exc:
        usage(f"{option}: {exc}")


def numbers(given: list[str] | None, option: str, default: str, kind: type = float) -> list:
    """A list option's numbers: the option repeated, each value a number or several comma-separated (``default``
    when it was not given); exit 2 when there are none or one cannot be read."""
    text = ",".join(given) if given else default
    try:
        values = [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values:
        usage(f"{option} wants numbers (repeat the option, or separate them by commas), got {text!r}")
    return values


def device_option(device: str) -> str:
    """--device checked: its name (exit 2) and that a CUDA device exists when asked for (exit 1)."""
    from nlndl.jobs import check_device

    try:
        check_device(device)
    except ValueError as exc:
        usage(str(exc))
    return device


def check_outputs(*paths: Path | None, plot: Path | None = None) -> None:
    """Every output file a bench names can be written (and a plot's format is known), before the long run."""
    for path in (*paths, plot):
        if path is not None:
            check_writable(path)
    if plot is not None and plot.suffix.lower() not in PLOT_FORMATS:
        fail(f"{plot}: error: a plot is written as {', '.join(PLOT_FORMATS)}; name the file with one of them")
    if plot is not None and importlib.util.find_spec("matplotlib") is None:
        fail(f"{plot}: error: plots need matplotlib, an optional extra: pip install 'nlndl[plot]'")


def saved(summary: dict, target: OutputDir | None, save: Callable[[Path], None]) -> dict:
    """An artefact saved into ``target`` (``-o``) when given, whole or not at all; its summary says where."""
    from nlndl import jobs

    if target is not None:
        jobs.save(target, save)
        summary["output"] = str(target.root)
    return summary


def warn(warnings: list[str]) -> None:
    """Warnings on stderr; the command goes on."""
    for warning in warnings:
        typer.echo(warning, err=True)


def publish_report(
    table: str, report: dict, json_path: Path | None, plot_path: Path | None = None, plot: str = ""
) -> None:
    """A bench's table on stdout, then its JSON and its figure (``nlndl.bench.plot.<plot>``) where asked."""
    typer.echo(table)
    if json_path is not None:
        write_json(json_path, record(report))
    if plot_path is not None:
        from nlndl.bench import plot as plots

        getattr(plots, plot)(report, plot_path)


def record(report: dict) -> dict:
    """A bench's JSON record: its figures, with the command line that measured them first."""
    return {"command": shlex.join(["nlndl", *sys.argv[1:]]), **report}


def subgraph_line(part: dict) -> str:
    world = f" of world {part['world']}" if part["world"] != "main" else ""
    held = f", {part['examples']:,} of {part['examples_of']:,} given examples" if part.get("examples_of") else ""
    return f"trained on a subgraph{world}: {part['entities']:,} of {part['of']:,} constants{held} (verified on all)"


JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
FactDir = Annotated[Path | None, typer.Option("-F", "--fact-dir", help="Where .input relations' .facts files are.")]
LayoutOption = Annotated[
    LayoutKind,
    typer.Option(
        "--layout",
        help="The valuation layout: dense (every ground atom), sparse (true facts and demanded atoms), "
        "or auto (sparse above 2^20 dense atoms).",
    ),
]


def subgraph_value(text: str | int | None) -> int | str | None:
    """--subgraph's value: auto, none, or a number of constants (at least 2); also its option's callback, so
    that a bad value is a usage error naming the option."""
    if text is None or text == "auto" or isinstance(text, int) and text >= SUBGRAPH_MIN:
        return text
    if text == "none":
        return None
    try:
        value = int(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not auto, none or a number of constants") from None
    if value < SUBGRAPH_MIN:
        raise typer.BadParameter(f"{value} is fewer than {SUBGRAPH_MIN} constants")
    return value


SubgraphOption = Annotated[
    str,
    typer.Option(
        "--subgraph",
        metavar="auto|none|ENTITIES",
        callback=subgraph_value,
        help="Train on a subgraph of each world: this many constants, reached over the facts from drawn positive "
        "examples (seeded), grown from the counterexamples until the rules hold on the whole world, where they "
        f"are verified. auto: a subgraph only where a world's training work (index entries x steps) would pass "
        f"{SUBGRAPH_WORK:,} (about {SUBGRAPH_GRID:,} substitutions in the subgraph, fewer where they would hold more "
        f"than {SUBGRAPH_ENTRIES:,} index entries); none: the whole worlds.",
    ),
]
KGSubgraphOption = Annotated[
    int | None,
    typer.Option(
        "--subgraph",
        min=SUBGRAPH_MIN,
        metavar="ENTITIES",
        help="Train on a subgraph of each relation's world: this many constants, reached over the facts from "
        "drawn positive examples (seeded); default: the whole graph.",
    ),
]
KGTimeOption = Annotated[
    float,
    typer.Option(
        "--time-limit",
        min=1.0,
        callback=finite,
        help="Seconds of training per relation at most (--patience usually stops it sooner).",
    ),
]
KGPatienceOption = Annotated[
    int,
    typer.Option(
        "--patience",
        min=1,
        metavar="ITERATIONS",
        help="Stop a relation once no clause read out has raised the confidence of any known triple for this "
        "many iterations (--time-limit is the ceiling).",
    ),
]
KGJobsOption = Annotated[
    int,
    typer.Option(
        "--jobs",
        min=0,
        metavar="N",
        help="Relations learned at once, each by its own process with one thread (the result is the same for "
        f"any N); 0: one per core, as many as memory holds at {TRAIN_MEMORY} each.",
    ),
]
KGNoiseOption = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        max=0.5,
        callback=finite,
        help="Accept a relation's rules wrong on at most this fraction of each class.",
    ),
]
KGRelations = Annotated[
    list[str] | None, typer.Option("--relation", help="A relation to learn (repeatable); default: every one.")
]
# A Datalog program whose rules join the sketch's background: how a learned predicate (the <name>.dl of an
# earlier train) becomes background knowledge of the next task.
Background = Annotated[
    list[Path] | None,
    typer.Option(
        "-B",
        "--background",
        exists=True,
        dir_okay=False,
        help="A Datalog program whose rules join the sketch's background, e.g. the <name>.dl of an earlier train.",
    ),
]
