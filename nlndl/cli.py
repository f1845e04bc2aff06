"""The ``nlndl`` command line: one verb per job, no logic beyond argument handling and printing.

Exit codes: 0 success, 1 diagnostics or a failed job, 2 usage errors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from nlndl import __version__
from nlndl.output import OutputError, check_writable, write_json
from nlndl.progress import progress_bar

app = typer.Typer(
    name="nlndl",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Learn explicit, verifiable Datalog programs with Neural Logic Networks.",
)
bench_app = typer.Typer(
    no_args_is_help=True, help="Run the paper's experiments and the performance benchmarks."
)
app.add_typer(bench_app, name="bench")

stdout = Console()


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


def _fail(message: str) -> None:
    """Print a diagnostic unwrapped (so that file:line:col stays on one line) and exit 1."""
    typer.echo(message, err=True)
    raise typer.Exit(1)


def _check_outputs(*paths: Path | None) -> None:
    for path in paths:
        if path is not None:
            try:
                check_writable(path)
            except OutputError as exc:
                _fail(str(exc))


@bench_app.command("boolean")
def bench_boolean(
    quick: Annotated[
        bool, typer.Option("--quick", help="Reduced run (under 5 minutes on 2 CPU cores).")
    ] = False,
    json_path: Annotated[
        Path | None, typer.Option("--json", help="Write all runs and curves as JSON.")
    ] = None,
    plot_path: Annotated[
        Path | None, typer.Option("--plot", help="Write the DNF and parity curves as PNG.")
    ] = None,
    seeds: Annotated[int | None, typer.Option(min=1, help="Seeds per setting (both experiments).")] = None,
    dnf_steps: Annotated[int | None, typer.Option(min=1, help="Training steps per DNF run.")] = None,
    xor_steps: Annotated[int | None, typer.Option(min=1, help="Training steps per parity run.")] = None,
    xor_init: Annotated[
        str | None, typer.Option(help="XOR neuron init, e.g. 'normal:std=0.1' or 'constant:mean=0'.")
    ] = None,
    threads: Annotated[int, typer.Option(min=0, help="torch CPU threads (0: torch's default).")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """NLN vs MLP on random DNF functions and on parity (paper section 3)."""
    from nlndl.bench import boolean
    from nlndl.runtime.init import Init

    _check_outputs(json_path, plot_path)
    if xor_init is not None:
        try:
            Init.parse(xor_init)
        except ValueError as exc:
            typer.echo(f"error: --xor-init: {exc}", err=True)
            raise typer.Exit(2) from None
    cfg = boolean.BooleanConfig.quick() if quick else boolean.BooleanConfig()
    cfg = boolean.with_overrides(
        cfg,
        dnf_seeds=seeds,
        xor_seeds=seeds,
        dnf_steps=dnf_steps,
        xor_steps=xor_steps,
        xor_init=xor_init,
        threads=threads,
    )
    with progress_bar(boolean.run_count(cfg), quiet) as tell:
        results = boolean.run(cfg, tell)
    table = Table(title="NLN vs MLP on Boolean functions")
    for column in ("experiment", "setting", "model", "runs", "reached 0", "stayed 0", "final errors (mean)"):
        table.add_column(column)
    for row in results["summary"]:
        table.add_row(
            row["experiment"],
            row["setting"],
            row["model"],
            str(row["runs"]),
            str(row["reached_zero"]),
            "-" if row["stayed_zero"] is None else str(row["stayed_zero"]),
            f"{row['final_errors_mean']:.4g}",
        )
    stdout.print(table)
    if json_path is not None:
        write_json(json_path, results)
        stdout.print(f"wrote {json_path}")
    if plot_path is not None:
        from nlndl.bench.plot import plot_boolean

        plot_boolean(results, plot_path)
        stdout.print(f"wrote {plot_path}")


def main() -> None:
    """Entry point of the ``nlndl`` console script."""
    app()
