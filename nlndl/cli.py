"""The ``nlndl`` command line: one verb per job, no logic beyond argument handling and printing.

Exit codes: 0 success, 1 diagnostics or a failed job, 2 usage errors.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from nlndl import __version__
from nlndl.output import OutputError, check_replaceable_program, check_writable, write_json
from nlndl.progress import progress_bar

app = typer.Typer(
    name="nlndl",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Learn explicit, verifiable Datalog programs with Neural Logic Networks.",
)
bench_app = typer.Typer(no_args_is_help=True, help="Run the paper's experiments and the performance benchmarks.")
app.add_typer(bench_app, name="bench")
ldpc_app = typer.Typer(no_args_is_help=True, help="LDPC codes: Tanner graphs for message-passing decoders.")
app.add_typer(ldpc_app, name="ldpc")

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


class Show(StrEnum):
    depgraph = "depgraph"
    strata = "strata"
    ir = "ir"


@app.command("compile")
def compile_command(
    sketch: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The program sketch (.dl).")],
    fact_dir: Annotated[
        Path | None, typer.Option("-F", "--fact-dir", help="Where .input relations' <name>.facts files are.")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Save the compiled program to this directory.")
    ] = None,
    json_summary: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    show: Annotated[list[Show] | None, typer.Option(help="Also print: depgraph, strata or ir.")] = None,
    memory_limit: Annotated[str, typer.Option(help="Refuse index arrays larger than this.")] = "2GiB",
    steps: Annotated[int | None, typer.Option(min=1, help="Forward-chaining steps (default: derived).")] = None,
) -> None:
    """Check a program sketch and compile it to index arrays."""
    from nlndl.compiler import CompileError, compile_sketch
    from nlndl.output import parse_size, replace_directory
    from nlndl.show import show_depgraph, show_ir, show_strata

    try:
        limit = parse_size(memory_limit)
    except ValueError as exc:
        typer.echo(f"error: --memory-limit: {exc}", err=True)
        raise typer.Exit(2) from None
    if output is not None:
        try:
            check_replaceable_program(output)
        except OutputError as exc:
            _fail(str(exc))
    try:
        program = compile_sketch(sketch, fact_dir, memory_limit=limit, steps=steps)
    except CompileError as exc:
        _fail(exc.diagnostics.render())
    summary = program.summary()
    if output is not None:
        replace_directory(output, program.save)
        summary["output"] = str(output)
    if json_summary:
        typer.echo(json.dumps(summary))
    else:
        learned = ", ".join(summary["learned"]) or "none"
        lines = [
            f"{sketch}: {summary['predicates']} predicates ({learned} learned), {len(summary['strata'])} strata, "
            f"{summary['worlds']} world(s), {summary['steps']} steps",
            f"  atoms {summary['atoms']:,}; substitutions {summary['substitutions']:,} kept, "
            f"{summary['pruned']:,} pruned; index entries {summary['index_entries']:,}; {summary['bytes']:,} bytes",
        ]
        if output is not None:
            lines.append(f"  saved to {output}")
        typer.echo("\n".join(lines))
    for what in show or []:
        dump = {Show.depgraph: show_depgraph, Show.strata: show_strata, Show.ir: show_ir}[what]
        typer.echo(f"-- {what.value}\n{dump(program)}")


@ldpc_app.command("compile")
def ldpc_compile(
    matrix: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="Parity-check matrix: *.alist, or 0/1 text (a row per line)."),
    ] = None,
    generate: Annotated[
        str | None, typer.Option(help="Generate a regular code instead: N,DV,DC (e.g. 48,3,6).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of --generate.")] = 0,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Save the Tanner graph here.")] = None,
    json_summary: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
) -> None:
    """Compile a parity-check matrix (read or generated) to Tanner-graph edge index arrays."""
    from nlndl.compiler.ldpc import MatrixError, TannerGraph, generate_regular, read_matrix
    from nlndl.output import replace_directory

    if (matrix is None) == (generate is None):
        typer.echo("error: give exactly one of --matrix FILE or --generate N,DV,DC", err=True)
        raise typer.Exit(2)
    if output is not None:
        try:
            check_replaceable_program(output)
        except OutputError as exc:
            _fail(str(exc))
    if generate is not None:
        try:
            n, dv, dc = (int(x) for x in generate.split(","))
            graph = TannerGraph.from_matrix(generate_regular(n, dv, dc, seed), source="generated", seed=seed)
        except ValueError as exc:
            typer.echo(f"error: --generate {generate}: {exc}", err=True)
            raise typer.Exit(2) from None
    else:
        try:
            graph = TannerGraph.from_matrix(read_matrix(matrix), source=str(matrix))
        except MatrixError as exc:
            _fail(str(exc))
    summary = graph.summary()
    if output is not None:
        replace_directory(output, graph.save)
        summary["output"] = str(output)
    if json_summary:
        typer.echo(json.dumps(summary))
    else:
        typer.echo(
            f"Tanner graph: n={summary['n']} variables, m={summary['m']} checks, {summary['edges']} edges, "
            f"GF(2) rank {summary['rank']}, {summary['four_cycles']} four-cycles, variable degrees "
            f"{summary['var_degrees']}, check degrees {summary['check_degrees']}, {summary['bytes']:,} bytes"
            + (f"\n  saved to {output}" if output is not None else "")
        )


@bench_app.command("boolean")
def bench_boolean(
    quick: Annotated[bool, typer.Option("--quick", help="Reduced run (under 5 minutes on 2 CPU cores).")] = False,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write all runs and curves as JSON.")] = None,
    plot_path: Annotated[Path | None, typer.Option("--plot", help="Write the DNF and parity curves as PNG.")] = None,
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
