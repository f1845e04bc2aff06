"""``nlndl ldpc compile``, ``train`` and ``eval``: Tanner graphs, learned erasure decoders against BP and ML."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from nlndl.cli.common import JsonOption, ldpc_app, numbers, reported, saved, size_option, stdout, usage
from nlndl.defaults import LDPC_BATCH, LDPC_CODE, LDPC_ITERATIONS, LDPC_STEPS, MAX_SEED, TRAIN_MEMORY

GENERATED = ",".join(map(str, LDPC_CODE))
MatrixOption = Annotated[
    Path | None,
    typer.Option(exists=True, dir_okay=False, help="Parity-check matrix: *.alist, or 0/1 text (a row per line)."),
]
GraphOption = Annotated[
    Path | None,
    typer.Option("--graph", exists=True, file_okay=False, help="A Tanner graph saved by `nlndl ldpc compile -o`."),
]
CodeSeed = Annotated[int, typer.Option(min=0, help="Seed of --generate.")]


class DecoderKind(StrEnum):
    nln = "nln"
    mlp = "mlp"


def _code(matrix: Path | None, generate: str | None, seed: int, graph: Path | None = None):
    """The code of --graph DIR, --matrix FILE, else --generate N,DV,DC (exit 2 on a bad specification)."""
    from nlndl.jobs import ldpc as ldpc_jobs

    if graph is not None and matrix is not None:
        usage("give at most one of --graph DIR and --matrix FILE")
    if graph is not None:
        return ldpc_jobs.saved_tanner_graph(graph)
    try:
        return ldpc_jobs.tanner_graph(matrix, generate, seed)
    except ValueError as exc:
        usage(f"--generate {generate}: {exc}")


@ldpc_app.command("compile")
@reported
def ldpc_compile(
    matrix: MatrixOption = None,
    generate: Annotated[
        str | None, typer.Option(help=f"Generate a regular code instead: N,DV,DC (e.g. {GENERATED}).")
    ] = None,
    seed: Annotated[int, typer.Option("--code-seed", "--seed", min=0, help="Seed of --generate.")] = 0,
    output: Annotated[
        Path | None, typer.Option("-D", "--output-dir", "-o", "--output", help="Save the Tanner graph here.")
    ] = None,
    json_summary: JsonOption = False,
) -> None:
    """Compile a parity-check matrix (read or generated) to Tanner-graph edge index arrays."""
    from nlndl import jobs

    if (matrix is None) == (generate is None):
        usage("give exactly one of --matrix FILE or --generate N,DV,DC")
    target = jobs.output_dir(output, writer="ldpc compile") if output is not None else None
    graph = _code(matrix, generate, seed)
    summary = saved(graph.summary(), target, graph.save)
    if json_summary:
        typer.echo(json.dumps(summary))
        return
    typer.echo(
        f"Tanner graph: n={summary['n']} variables, m={summary['m']} checks, {summary['edges']} edges, "
        f"GF(2) rank {summary['rank']}, {summary['four_cycles']} four-cycles, variable degrees "
        f"{summary['var_degrees']}, check degrees {summary['check_degrees']}, {summary['bytes']:,} bytes"
        + (f"\n  saved to {output}" if output is not None else "")
    )


@ldpc_app.command("train")
@reported
def ldpc_train(
    output: Annotated[
        Path, typer.Option("-D", "--output-dir", "-o", "--output", help="Directory for the trained decoder.")
    ],
    decoder: Annotated[DecoderKind, typer.Option(help="Node functions: NLN layers or MLPs.")] = DecoderKind.nln,
    graph: GraphOption = None,
    matrix: MatrixOption = None,
    generate: Annotated[str, typer.Option(help="Code to train on when no --graph or --matrix: N,DV,DC.")] = GENERATED,
    code_seed: CodeSeed = 0,
    steps: Annotated[int, typer.Option(min=1, help="Training steps (Adam).")] = LDPC_STEPS,
    batch: Annotated[int, typer.Option(min=1, help="Codewords per step.")] = LDPC_BATCH,
    iterations: Annotated[
        int, typer.Option(min=1, help="Message-passing iterations while training.")
    ] = LDPC_ITERATIONS,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the weights and the training codewords.")] = 0,
    lr: Annotated[
        float | None, typer.Option(min=1e-9, help="Adam's learning rate (default: nln 0.03, mlp 0.01).")
    ] = None,
    json_summary: JsonOption = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress line.")] = False,
    memory_limit: Annotated[
        str, typer.Option(help="Refuse training steps estimated to need more memory than this.")
    ] = TRAIN_MEMORY,
) -> None:
    """Train a recurrent erasure decoder on random codewords; save weights (safetensors) and settings (JSON)."""
    from nlndl import jobs
    from nlndl.decoder_training import DecoderTraining
    from nlndl.jobs import ldpc as ldpc_jobs
    from nlndl.progress import status_line

    # checked before the code is read and the decoder trained
    jobs.output_dir(output, ldpc_jobs.DECODER_FILES, writer="ldpc train")
    code = _code(matrix, generate, code_seed, graph)
    training = DecoderTraining(kind=decoder.value, steps=steps, batch=batch, iterations=iterations, seed=seed, lr=lr)
    limit = size_option(memory_limit)
    with status_line(quiet or json_summary) as tell:
        summary = ldpc_jobs.train_ldpc_decoder(output, code, training, tell, limit)
    if json_summary:
        typer.echo(json.dumps(summary))
        return
    stdout.print(
        f"trained {decoder.value} decoder ({summary['parameters']} parameters) in {summary['seconds']:.1f} s; "
        f"best validation BER {summary['validation_ber']:.4f} at eps {summary['validation_eps']}, t = {iterations} "
        f"(step {summary['best_step']})"
    )
    for part, outputs in summary.get("formulas", {}).items():
        for name, text in outputs.items():
            stdout.print(f"  {part}.{name} = {text}", markup=False)
    stdout.print(f"wrote {output}")


@ldpc_app.command("eval")
@reported
def ldpc_eval(
    decoder_dir: Annotated[Path, typer.Argument(help="A directory written by `nlndl ldpc train`.")],
    graph: GraphOption = None,
    matrix: MatrixOption = None,
    generate: Annotated[str, typer.Option(help="Code to decode when no --graph or --matrix: N,DV,DC.")] = GENERATED,
    code_seed: CodeSeed = 0,
    eps: Annotated[list[str] | None, typer.Option(help="Erasure probabilities (repeatable); default: 0.3,0.4.")] = None,
    iterations: Annotated[
        list[str] | None, typer.Option(help="Iteration counts t (repeatable); default: 1,2,3,5,10,20,50.")
    ] = None,
    codewords: Annotated[int, typer.Option(min=1, help="Random codewords per erasure probability.")] = 2000,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the test codewords and erasures.")] = 0,
    json_summary: JsonOption = False,
) -> None:
    """BER and WER of a trained decoder, BP and ML on the same random codewords."""
    from nlndl.jobs import ldpc as ldpc_jobs

    eps_list = numbers(eps, "--eps", "0.3,0.4")
    ts = numbers(iterations, "--iterations", "1,2,3,5,10,20,50", int)
    if any(not 0 <= e <= 1 for e in eps_list) or any(t < 1 for t in ts):
        usage("--eps values lie in [0, 1] and --iterations are positive")
    code = _code(matrix, generate, code_seed, graph)
    rows = ldpc_jobs.evaluate_ldpc_decoder(decoder_dir, code, eps_list, ts, codewords, seed)
    if json_summary:
        typer.echo(json.dumps({"code": code.summary(), "codewords": codewords, "results": rows}))
        return
    table = Table(title=f"BER / WER, n = {code.meta['n']}, {codewords} random codewords per eps")
    for column in ("eps", "decoder", "t", "BER", "WER"):
        table.add_column(column)
    for r in rows:
        t = "-" if r["t"] is None else str(r["t"])
        table.add_row(str(r["eps"]), r["decoder"], t, f"{r['ber']:.4f}", f"{r['wer']:.4f}")
    stdout.print(table)
