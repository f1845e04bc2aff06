"""The ``nlndl`` command line: one verb per job, no logic beyond argument handling and printing.

Exit codes: 0 success, 1 diagnostics or a failed job, 2 usage errors, 3 an internal error (a bug), 130 Ctrl-C.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from nlndl import __version__
from nlndl.allocator import keep_freed_memory, share_cpu
from nlndl.output import OutputDir, OutputError, check_writable, write_bytes_atomic, write_json
from nlndl.progress import progress_bar, status_line

INTERNAL_ERROR = 3  # exit code of a bug: 0 success, 1 diagnostics or a failed job, 2 usage
MAX_STEPS = 10_000  # compiler.check.MAX_STEPS, the most forward-chaining steps
MAX_ITERS = 4000  # TrainConfig.max_iters, written out so that --help does not import torch

app = typer.Typer(
    name="nlndl",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Learn explicit, verifiable Datalog programs with Neural Logic Networks.",
)
bench_app = typer.Typer(no_args_is_help=True, help="Run the paper's experiments and the performance benchmarks.")
app.add_typer(bench_app, name="bench")
ldpc_app = typer.Typer(
    no_args_is_help=True, help="LDPC codes over the erasure channel: Tanner graphs, learned and classical decoders."
)
app.add_typer(ldpc_app, name="ldpc")
kg_app = typer.Typer(no_args_is_help=True, help="Knowledge graphs given as triples (the Neural LP layout).")
app.add_typer(kg_app, name="kg")

stdout = Console(width=None if sys.stdout.isatty() else 140)  # tables stay readable in logs and pipes


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
    keep_freed_memory()  # this process only: step temporaries reuse heap memory instead of fresh pages
    share_cpu()  # idle OpenMP threads sleep: a busy machine costs a run no more than its share


def _fail(message: str) -> None:
    """Print a diagnostic unwrapped (so that file:line:col stays on one line) and exit 1."""
    typer.echo(message, err=True)
    raise typer.Exit(1)


def _check_device(device: str) -> None:
    """--device is cpu, cuda or cuda:N (exit 2 otherwise), and a CUDA device exists when asked for (exit 1)."""
    import torch

    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        typer.echo(f"error: --device {device}: expected cpu or cuda", err=True)
        raise typer.Exit(2)
    if device.startswith("cuda") and not torch.cuda.is_available():
        _fail(f"error: --device {device}: no CUDA device is available (torch {torch.__version__})")


PLOT_FORMATS = (".png", ".svg", ".pdf")


def _check_outputs(*paths: Path | None, plot: Path | None = None) -> None:
    """Every output file a bench names can be written (and a plot's format is known), before the long run."""
    for path in (*paths, plot):
        if path is not None:
            try:
                check_writable(path)
            except OutputError as exc:
                _fail(str(exc))
    if plot is not None and plot.suffix.lower() not in PLOT_FORMATS:
        _fail(f"{plot}: error: a plot is written as {', '.join(PLOT_FORMATS)}; name the file with one of them")


PROGRAM_FILES = ["program.json", "arrays.safetensors"]


def _program_dir(output: Path | None, files: list[str] = PROGRAM_FILES) -> OutputDir | None:
    """The directory ``-o`` names, checked before the work: its ``files`` may replace an earlier nlndl output,
    nothing else."""
    if output is None:
        return None
    try:
        directory = OutputDir(output)
        directory.check(files)
    except OutputError as exc:
        _fail(str(exc))
    return directory


def _save_and_summarise(summary: dict, output: OutputDir | None, save, json_summary: bool) -> dict:
    """Save a compiled artefact into ``output`` (replacing only an earlier one) and print JSON if asked."""
    if output is not None:
        try:
            output.publish(save, expected=PROGRAM_FILES)
        except OutputError as exc:
            _fail(str(exc))
        summary["output"] = str(output.root)
    if json_summary:
        typer.echo(json.dumps(summary))
    return summary


class LayoutKind(StrEnum):  # compiler.LAYOUTS
    auto = "auto"
    dense = "dense"
    sparse = "sparse"


LayoutOption = Annotated[
    LayoutKind,
    typer.Option(
        "--layout",
        help="The valuation layout: dense (every ground atom), sparse (true facts and demanded atoms), "
        "or auto (sparse above 2^20 dense atoms).",
    ),
]
SubgraphOption = Annotated[
    int | None,
    typer.Option(
        "--subgraph",
        min=2,
        metavar="ENTITIES",
        help="Train on a subgraph of each world: this many constants, reached over the facts from drawn positive "
        "examples (seeded); the rules are verified on the whole world.",
    ),
]


class Show(StrEnum):
    depgraph = "depgraph"
    strata = "strata"
    ir = "ir"


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
    steps: Annotated[
        int | None, typer.Option(min=1, max=MAX_STEPS, help="Forward-chaining steps (default: derived).")
    ] = None,
    background: Background = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of sampled closed-world negatives.")] = 0,
    layout: LayoutOption = LayoutKind.auto,
    subgraph: SubgraphOption = None,
) -> None:
    """Check a program sketch and compile it to index arrays."""
    from nlndl.compiler import CompileError, compile_sketch
    from nlndl.show import show_depgraph, show_ir, show_strata

    limit = _size_option(memory_limit)
    target = _program_dir(output)
    try:
        program = compile_sketch(
            sketch,
            fact_dir,
            memory_limit=limit,
            steps=steps,
            background=tuple(background or ()),
            seed=seed,
            layout=layout.value,
            subgraph=subgraph,
        )
    except CompileError as exc:
        _fail(exc.diagnostics.render())
    _warn(program.warnings)
    summary = _save_and_summarise(program.summary(), target, program.save, json_summary)
    if not json_summary:
        learned = ", ".join(summary["learned"]) or "none"
        lines = [
            f"{sketch}: {summary['predicates']} predicates ({learned} learned), {len(summary['strata'])} strata, "
            f"{summary['worlds']} world(s), {summary['steps']} steps",
            f"  atoms {summary['atoms']:,}; substitutions {summary['substitutions']:,} kept, "
            f"{summary['pruned']:,} pruned; index entries {summary['index_entries']:,}; {summary['bytes']:,} bytes",
        ]
        lines += [_subgraph_line(part) for part in summary["subgraph"]]
        if output is not None:
            lines.append(f"  saved to {output}")
        typer.echo("\n".join(lines))
    for what in show or []:
        dump = {Show.depgraph: show_depgraph, Show.strata: show_strata, Show.ir: show_ir}[what]
        typer.echo(f"-- {what.value}\n{dump(program)}")


class Dialect(StrEnum):
    souffle = "souffle"
    clingo = "clingo"


class ClassWeight(StrEnum):  # runtime.chain.CLASS_WEIGHTS, here without importing torch
    sqrt = "sqrt"
    balanced = "balanced"
    none = "none"


def _size_option(text: str, option: str = "--memory-limit") -> int:
    """A size option in bytes (exit 2 when it cannot be read)."""
    from nlndl.output import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        typer.echo(f"error: {option}: {exc}", err=True)
        raise typer.Exit(2) from None


def _subgraph_line(part: dict) -> str:
    world = f" of world {part['world']}" if part["world"] != "main" else ""
    return f"  trained on a subgraph{world}: {part['entities']:,} of {part['of']:,} constants (verified on all)"


def _compile_or_fail(
    sketch: Path,
    fact_dir: Path | None,
    steps: int | None = None,
    background: list[Path] | None = None,
    memory_limit: int | None = None,
    seed: int = 0,
    layout: str = "auto",
    subgraph: int | None = None,
):
    from nlndl.compiler import DEFAULT_MEMORY_LIMIT, CompileError, compile_sketch

    try:
        program = compile_sketch(
            sketch,
            fact_dir,
            memory_limit=memory_limit or DEFAULT_MEMORY_LIMIT,
            steps=steps,
            background=tuple(background or ()),
            seed=seed,
            layout=layout,
            subgraph=subgraph,
        )
    except CompileError as exc:
        _fail(exc.diagnostics.render())
    _warn(program.warnings)
    return program


def _warn(warnings: list[str]) -> None:
    """Compile warnings on stderr; the command goes on."""
    for warning in warnings:
        typer.echo(warning, err=True)


def _results_dir(out: Path, stem: str, program, resume: bool) -> tuple[OutputDir, str]:
    """The output directory of ``train``, with every path it may write checked before training starts: files
    nlndl derives may replace what nlndl wrote there (its manifest says which), never anything else; with
    ``resume``, the checkpoint it continues from is replaced by its continuation."""
    from nlndl.export import planned_paths

    files, dirs = planned_paths(stem, program)
    checkpoint = f"{stem}.checkpoint"
    saved = [f"{checkpoint}/checkpoint.json", f"{checkpoint}/checkpoint.safetensors"]
    files += [f"{stem}.json", *saved]
    try:
        directory = OutputDir(out)
        if resume:
            directory.adopted.update(saved)
        directory.check(files, [*dirs, checkpoint])
    except OutputError as exc:
        _fail(str(exc))
    return directory, checkpoint


@app.command("train")
def train_command(
    sketch: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The program sketch (.dl).")],
    fact_dir: Annotated[Path | None, typer.Option("-F", "--fact-dir", help="Where .facts files are.")] = None,
    output_dir: Annotated[
        Path, typer.Option("-D", "--output-dir", help="Where to write <name>.dl, <name>.lp and <name>.json.")
    ] = Path("nlndl-out"),
    seed: Annotated[int, typer.Option(min=0, help="Random seed (same seed, same result on CPU).")] = 0,
    restarts: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Independent initialisations trained together (default: by index entries x steps, 64 up to "
            "64,000, 32 up to 256,000, else 16).",
        ),
    ] = None,
    max_iters: Annotated[int, typer.Option(min=1, help="Iteration limit.")] = MAX_ITERS,
    time_limit: Annotated[float | None, typer.Option(min=0.0, help="Wall-clock limit in seconds.")] = None,
    steps: Annotated[
        int | None, typer.Option(min=1, max=MAX_STEPS, help="Forward-chaining steps (default: the sketch's).")
    ] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda (the same code runs on both).")] = "cpu",
    class_weight: Annotated[
        ClassWeight,
        typer.Option(
            help="A positive example's weight in the loss, against a negative's, with P positives and N "
            "negatives: sqrt(N/P), N/P (balanced: each class half the loss) or 1 (none)."
        ),
    ] = ClassWeight.sqrt,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the checkpoint of an interrupted run.")
    ] = False,
    json_summary: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    memory_limit: Annotated[
        str, typer.Option(help="Refuse compiling or training that is estimated to need more memory than this.")
    ] = "8GiB",
    background: Background = None,
    layout: LayoutOption = LayoutKind.auto,
    subgraph: SubgraphOption = None,
    noise: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=0.5,
            help="Labels may be wrong: accept rules that clingo finds wrong on at most this fraction of the "
            "training examples (fewest mistakes, then fewest literals; stops once the best has not improved "
            "for 200 iterations).",
        ),
    ] = None,
) -> None:
    """Learn the sketch's predicates; write the verified rules as Soufflé and clingo Datalog.

    Exits 0 when clingo verifies the rules on every world (with --noise: within the allowance), 1 otherwise
    (printing the best rules found).
    """

    from nlndl.export import write_program
    from nlndl.learn import LearnConfig, learn
    from nlndl.progress import training_bar
    from nlndl.runtime.budget import BudgetError, fit_training
    from nlndl.runtime.chain import ChainConfig
    from nlndl.runtime.train import CheckpointError, TrainConfig, read_checkpoint

    _check_device(device)
    limit = _size_option(memory_limit)
    program = _compile_or_fail(sketch, fact_dir, steps, background, limit, seed, layout.value, subgraph)
    if not (quiet or json_summary):
        for part in program.summary()["subgraph"]:
            typer.echo(_subgraph_line(part).strip(), err=True)
    stem = "_".join(sorted(program.learned)) or sketch.stem
    checkpoint = output_dir / f"{stem}.checkpoint"
    if resume:
        if not (checkpoint / "checkpoint.json").is_file():
            _fail(f"{checkpoint}: error: no checkpoint to resume from")
        try:
            read_checkpoint(checkpoint)
        except CheckpointError as exc:
            _fail(f"{checkpoint}: error: checkpoint is unusable: {exc}; it was left as it was")
    out, checkpoint_rel = _results_dir(output_dir, stem, program, resume)
    chain = ChainConfig(restarts=restarts, class_weight=class_weight.value).for_program(program)  # bar shows it
    try:
        fitted = fit_training(program, chain, limit, restarts_given=restarts is not None)
    except BudgetError as exc:
        _fail(f"{sketch}: error: {exc}")
    if fitted != chain and not (quiet or json_summary):
        fewer = f", {fitted.restarts} restarts instead of {chain.restarts}" if fitted.restarts != chain.restarts else ""
        note = f"training within --memory-limit {memory_limit}: steps recomputed in the backward pass{fewer}"
        typer.echo(note, err=True)
    config = LearnConfig(
        train=TrainConfig(seed=seed, max_iters=max_iters, time_limit=time_limit),
        chain=fitted,
        device=device,
        memory_limit=limit,
        noise=noise,
    )

    def save_checkpoint(trainer) -> None:
        out.publish(lambda staging: trainer.save(staging / checkpoint_rel))

    try:
        with training_bar(max_iters, config.chain.restarts, quiet or json_summary) as progress:
            result = learn(program, config, progress, resume=checkpoint if resume else None, checkpoint=save_checkpoint)
    except KeyboardInterrupt:
        typer.echo(f"interrupted: checkpoint saved to {checkpoint}; continue with --resume", err=True)
        raise typer.Exit(130) from None
    except CheckpointError as exc:
        _fail(f"{checkpoint}: error: checkpoint is unusable: {exc}; it was left as it was")
    except BudgetError as exc:
        _fail(f"{sketch}: error: {exc}")
    except OutputError as exc:
        _fail(f"{exc}\n(the checkpoint could not be saved; what was there is unchanged)")
    record = {
        "nlndl": __version__,
        "sketch": str(sketch.resolve()),
        "fact_dir": str(fact_dir.resolve()) if fact_dir else None,
        "background": [str(b.resolve()) for b in background or ()],
        "seed": seed,
        "class_weight": class_weight.value,
        "subgraph": subgraph,
        **result.to_json(),
    }

    def write_results(staging: Path) -> None:
        write_program(staging, stem, program, result.rules, str(sketch))
        (staging / f"{stem}.json").write_text(json.dumps(record, indent=1) + "\n")

    try:
        out.publish(write_results)
    except OutputError as exc:
        typer.echo("\n".join(["rules learned (not saved):", *result.rule_texts()]), err=True)
        _fail(str(exc))
    if result.solved:
        out.remove_tree(checkpoint_rel)
    if json_summary:
        keys = ("solved", "accepted", "seconds", "iterations", "restarts", "rules", "accuracy")
        typer.echo(json.dumps({k: record[k] for k in keys}))
    else:
        status = "solved (verified by clingo)" if result.solved else "NOT solved"
        if result.accepted and not result.solved:
            status = f"accepted under --noise {noise:g} (verified by clingo)"
        typer.echo(
            f"{stem}: {status} in {result.seconds:.2f} s, {result.iterations} iterations, "
            f"{result.restarts} restarts, seed {seed}"
        )
        for text in result.rule_texts():
            typer.echo(f"  {text}")
        score = result.score
        if result.accepted and not result.solved:
            typer.echo(
                f"  wrong on {score.mistakes:,} of {score.positives + score.negatives:,} training examples "
                f"({score.false_negatives:,} positives missed, {score.false_positives:,} negatives "
                f"derived): precision {score.precision:.3f}, recall {score.recall:.3f}, F1 {score.f1:.3f}"
            )
        elif not result.solved:
            typer.echo(f"  best rules: precision {score.precision:.3f}, recall {score.recall:.3f} on the examples")
        typer.echo(
            f"  wrote {output_dir / (stem + '.dl')}, {output_dir / (stem + '.lp')}, {output_dir / (stem + '.json')}"
        )
    raise typer.Exit(0 if result.solved or result.accepted else 1)


@kg_app.command("sketch")
def kg_sketch_command(
    directory: Annotated[
        Path, typer.Argument(exists=True, file_okay=False, help="facts.txt, train.txt [, valid.txt, test.txt]")
    ],
    target: Annotated[str, typer.Option(help="The relation to learn.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Write sketch.dl and the .facts files here.")],
    negatives: Annotated[int, typer.Option(min=0, help="Corrupted triples per positive, as negatives.")] = 2,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the corruptions.")] = 0,
    vars_: Annotated[int, typer.Option("--vars", min=2, max=6, help="Variables of the learned clauses.")] = 3,
    memory_limit: Annotated[str, typer.Option(help="Refuse triple files larger than this to read.")] = "2GiB",
) -> None:
    """Write a sketch learning one relation of a knowledge graph from the others: facts.txt as background,
    the target's known triples as positives, corrupted ones as negatives (open world); then nlndl train it."""
    from nlndl.compiler.diagnostics import Diagnostics
    from nlndl.compiler.triples import kg_sketch

    limit = _size_option(memory_limit)
    diags = Diagnostics()
    made = kg_sketch(directory, target, diags, negatives, seed, vars_, limit)
    if made is None:
        _fail(diags.render())
    files = ["sketch.dl", *(f"{name}.facts" for name in made.facts)]
    try:
        out = OutputDir(output)
        out.check(files)

        def write(staging: Path) -> None:
            (staging / "sketch.dl").write_text(made.text)
            for name, text in made.facts.items():
                (staging / f"{name}.facts").write_text(text)

        out.publish(write, expected=files)
    except OutputError as exc:
        _fail(str(exc))
    typer.echo(
        f"{output / 'sketch.dl'}: {made.relations[target]} from {len(made.facts)} relations, "
        f"{made.positives:,} positive and {made.negatives:,} corrupted negative examples; "
        f"learn it with: nlndl train {output / 'sketch.dl'}"
    )


@app.command("export")
def export_command(
    results: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A <name>.json written by nlndl train.")],
    dialect: Annotated[Dialect, typer.Option("--format", help="souffle (.dl) or clingo (.lp).")] = Dialect.souffle,
) -> None:
    """Print saved learned rules as Soufflé or clingo Datalog."""
    from nlndl.api import read_rules
    from nlndl.compiler import DEFAULT_MEMORY_LIMIT
    from nlndl.export import clingo_text, souffle_text

    try:
        record = json.loads(results.read_text())
        sketch, fact_dir, rules_text = Path(record["sketch"]), record.get("fact_dir"), record["rules"]
        background = [Path(b) for b in record.get("background", [])]
        subgraph, seed = record.get("subgraph"), int(record.get("seed", 0))
        if not isinstance(rules_text, list) or not all(isinstance(r, str) for r in rules_text):
            raise TypeError("'rules' is not a list of strings")
        if seed < 0:
            raise ValueError(f"'seed' is negative ({seed})")
        if subgraph is not None and (not isinstance(subgraph, int) or subgraph < 2):
            raise TypeError("'subgraph' is not a whole number of at least 2")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        _fail(f"{results}:1:1: error: not a results file written by nlndl train ({exc})")
    if not sketch.exists():
        _fail(f"{results}: error: its sketch {sketch} no longer exists")
    # the subgraph trained on is compiled again (cheap where the whole world is not); only names are read
    where = Path(fact_dir) if fact_dir else None
    program = _compile_or_fail(sketch, where, background=background, seed=seed, subgraph=subgraph)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rules.dl"
        path.write_text("\n".join(rules_text) + "\n")
        from nlndl.compiler import CompileError

        try:
            rules = read_rules(path, program, memory_limit=DEFAULT_MEMORY_LIMIT)
        except CompileError as exc:
            _fail(exc.diagnostics.render())
    render = souffle_text if dialect == Dialect.souffle else clingo_text
    typer.echo(render(program, rules, str(sketch)), nl=False)


@app.command("check")
def check_command(
    rules: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Datalog rules (.dl syntax).")],
    sketch: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The sketch with the examples.")],
    fact_dir: Annotated[Path | None, typer.Option("-F", "--fact-dir", help="Where .facts files are.")] = None,
    background: Background = None,
    memory_limit: Annotated[
        str, typer.Option(help="Refuse sketches and rules files estimated to need more memory than this.")
    ] = "2GiB",
) -> None:
    """Run rules on a sketch's worlds with clingo; report examples they get wrong. Exit 0 if none."""
    from nlndl.api import read_rules
    from nlndl.compiler import CompileError
    from nlndl.verify import clingo_score

    limit = _size_option(memory_limit)
    program = _compile_or_fail(sketch, fact_dir, background=background, memory_limit=limit)
    try:
        parsed = read_rules(rules, program, memory_limit=limit)
    except CompileError as exc:
        _fail(exc.diagnostics.render())
    score = clingo_score(program, parsed)
    typer.echo(
        f"{rules}: {score.true_positives}/{score.positives} positive examples entailed, "
        f"{score.false_positives}/{score.negatives} negative examples entailed (clingo)"
    )
    for atom in score.missed:
        typer.echo(f"  missing: {atom}")
    for atom in score.wrong:
        typer.echo(f"  wrong:   {atom}")
    unlisted = score.false_negatives - len(score.missed)
    unlisted += score.false_positives - len(score.wrong)
    if unlisted:
        typer.echo(f"  ... and {unlisted:,} more")
    raise typer.Exit(0 if score.solved else 1)


def _tanner_graph(matrix: Path | None, generate: str | None, seed: int):
    """The code of --matrix FILE when given, else of --generate N,DV,DC (exit 2 on a bad spec, 1 on a bad file)."""
    from nlndl.compiler.ldpc import MatrixError, TannerGraph, generate_regular, read_matrix

    if matrix is not None:
        try:
            return TannerGraph.from_matrix(read_matrix(matrix), source=str(matrix))
        except MatrixError as exc:
            _fail(str(exc))
    try:
        n, dv, dc = (int(x) for x in (generate or "").split(","))
        return TannerGraph.from_matrix(generate_regular(n, dv, dc, seed), source="generated", seed=seed)
    except ValueError as exc:
        typer.echo(f"error: --generate {generate}: {exc}", err=True)
        raise typer.Exit(2) from None


def _numbers(text: str, option: str, kind: type = float) -> list:
    try:
        values = [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values:
        typer.echo(f"error: {option} wants comma-separated numbers, got {text!r}", err=True)
        raise typer.Exit(2)
    return values


CODEWORD_BYTES = 16  # per bit of a test codeword: the word, its erasures, channel messages and decisions
EVAL_MEMORY = 2 * 1024**3

MatrixOption = Annotated[
    Path | None,
    typer.Option(exists=True, dir_okay=False, help="Parity-check matrix: *.alist, or 0/1 text (a row per line)."),
]


class DecoderKind(StrEnum):
    nln = "nln"
    mlp = "mlp"


@ldpc_app.command("train")
def ldpc_train(
    output: Annotated[Path, typer.Option("-o", "--output", help="Directory for the trained decoder.")],
    decoder: Annotated[DecoderKind, typer.Option(help="Node functions: NLN layers or MLPs.")] = DecoderKind.nln,
    matrix: MatrixOption = None,
    generate: Annotated[str, typer.Option(help="Code to train on when no --matrix: N,DV,DC.")] = "48,3,6",
    code_seed: Annotated[int, typer.Option(min=0, help="Seed of --generate.")] = 0,
    steps: Annotated[int, typer.Option(min=1, help="Training steps (Adam).")] = 1500,
    batch: Annotated[int, typer.Option(min=1, help="Codewords per step.")] = 64,
    iterations: Annotated[int, typer.Option(min=1, help="Message-passing iterations while training.")] = 3,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the weights and the training codewords.")] = 0,
    lr: Annotated[
        float | None, typer.Option(min=1e-9, help="Adam's learning rate (default: nln 0.03, mlp 0.01).")
    ] = None,
    json_summary: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress line.")] = False,
    memory_limit: Annotated[
        str, typer.Option(help="Refuse training steps estimated to need more memory than this.")
    ] = "8GiB",
) -> None:
    """Train a recurrent erasure decoder on random codewords; save weights (safetensors) and settings (JSON)."""
    from dataclasses import replace

    from nlndl import ldpc
    from nlndl.runtime.budget import BudgetError

    decoder_files = ["decoder.json", "decoder.safetensors"]
    target = _program_dir(output, decoder_files)
    graph = _tanner_graph(matrix, generate, code_seed)
    cfg = replace(
        ldpc.TrainConfig(), kind=decoder.value, steps=steps, batch=batch, iterations=iterations, seed=seed, lr=lr
    )
    limit = _size_option(memory_limit)
    try:
        with status_line(quiet) as tell:
            trained, history = ldpc.train_decoder(graph, cfg, tell, limit)
    except BudgetError as exc:
        _fail(f"error: {exc}")
    try:
        target.publish(lambda staging: ldpc.save_decoder(staging, trained, cfg, history), expected=decoder_files)
    except OutputError as exc:
        _fail(str(exc))
    summary = {k: v for k, v in history.items() if k != "curve"}
    summary["output"] = str(output)
    if trained.shape.kind == "nln":
        summary["formulas"] = ldpc.formulas(trained)
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
def ldpc_eval(
    decoder_dir: Annotated[Path, typer.Argument(help="A directory written by `nlndl ldpc train`.")],
    matrix: MatrixOption = None,
    generate: Annotated[str, typer.Option(help="Code to decode when no --matrix: N,DV,DC.")] = "48,3,6",
    code_seed: Annotated[int, typer.Option(min=0, help="Seed of --generate.")] = 0,
    eps: Annotated[str, typer.Option(help="Erasure probabilities, comma-separated.")] = "0.3,0.4",
    iterations: Annotated[str, typer.Option(help="Iteration counts t, comma-separated.")] = "1,2,3,5,10,20,50",
    codewords: Annotated[int, typer.Option(min=1, help="Random codewords per erasure probability.")] = 2000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the test codewords and erasures.")] = 0,
    json_summary: Annotated[bool, typer.Option("--json", help="Print the rows as one JSON object.")] = False,
) -> None:
    """BER and WER of a trained decoder, BP and ML on the same random codewords."""
    from nlndl import ldpc

    eps_list = _numbers(eps, "--eps")
    ts = _numbers(iterations, "--iterations", int)
    if any(not 0 <= e <= 1 for e in eps_list) or any(t < 1 for t in ts):
        typer.echo("error: --eps values lie in [0, 1] and --iterations are positive", err=True)
        raise typer.Exit(2)
    try:
        trained, meta = ldpc.load_decoder(decoder_dir)
    except ValueError as exc:
        _fail(f"error: {exc}")
    graph = _tanner_graph(matrix, generate, code_seed)
    need = codewords * int(graph.meta["n"]) * CODEWORD_BYTES
    if need > EVAL_MEMORY:
        _fail(
            f"error: --codewords {codewords:,} of length {graph.meta['n']} need about {need / 2**30:.1f} GiB "
            f"of codewords and erasures, over {EVAL_MEMORY / 2**30:.0f} GiB; use fewer --codewords"
        )
    try:
        rows = ldpc.compare(graph, {trained.shape.kind: trained}, eps_list, ts, codewords, seed)
    except ValueError as exc:
        _fail(f"error: {exc}")
    if json_summary:
        typer.echo(json.dumps({"code": graph.summary(), "codewords": codewords, "results": rows}))
        return
    table = Table(title=f"BER / WER, n = {graph.meta['n']}, {codewords} random codewords per eps")
    for column in ("eps", "decoder", "t", "BER", "WER"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            str(r["eps"]), r["decoder"], "-" if r["t"] is None else str(r["t"]), f"{r['ber']:.4f}", f"{r['wer']:.4f}"
        )
    stdout.print(table)


@ldpc_app.command("compile")
def ldpc_compile(
    matrix: Annotated[
        Path | None,
        typer.Option(exists=True, dir_okay=False, help="Parity-check matrix: *.alist, or 0/1 text (a row per line)."),
    ] = None,
    generate: Annotated[
        str | None, typer.Option(help="Generate a regular code instead: N,DV,DC (e.g. 48,3,6).")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, help="Seed of --generate.")] = 0,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Save the Tanner graph here.")] = None,
    json_summary: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object.")] = False,
) -> None:
    """Compile a parity-check matrix (read or generated) to Tanner-graph edge index arrays."""
    if (matrix is None) == (generate is None):
        typer.echo("error: give exactly one of --matrix FILE or --generate N,DV,DC", err=True)
        raise typer.Exit(2)
    target = _program_dir(output)
    graph = _tanner_graph(matrix, generate, seed)
    summary = _save_and_summarise(graph.summary(), target, graph.save, json_summary)
    if not json_summary:
        typer.echo(
            f"Tanner graph: n={summary['n']} variables, m={summary['m']} checks, {summary['edges']} edges, "
            f"GF(2) rank {summary['rank']}, {summary['four_cycles']} four-cycles, variable degrees "
            f"{summary['var_degrees']}, check degrees {summary['check_degrees']}, {summary['bytes']:,} bytes"
            + (f"\n  saved to {output}" if output is not None else "")
        )


@bench_app.command("ilp")
def bench_ilp(
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Task names or folders (repeatable); default: all.")
    ] = None,
    seeds: Annotated[int, typer.Option(min=1, help="Seeds per task.")] = 10,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the results as JSON.")] = None,
    markdown_path: Annotated[Path | None, typer.Option("--markdown", help="Write the results as a table.")] = None,
    examples: Annotated[Path, typer.Option(help="The folder of bundled ILP sketches.")] = Path("examples/ilp"),
    spec: Annotated[
        Path | None,
        typer.Option(help="dilp_tasks.json for the published rates; default: the copy in EXAMPLES/dilp."),
    ] = None,
    max_iters: Annotated[int, typer.Option(min=1, help="Iteration limit per run.")] = MAX_ITERS,
    time_limit: Annotated[float | None, typer.Option(min=0.0, help="Seconds per run.")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda: where every run trains.")] = "cpu",
    jobs: Annotated[
        int,
        typer.Option(
            min=1, help="Runs at a time, in worker processes sharing the CPU threads; results do not depend on it."
        ),
    ] = 1,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Every bundled ILP task from several seeds; a run counts only when clingo verifies its rules."""
    from nlndl.bench import ilp

    _check_outputs(json_path, markdown_path)
    _check_device(device)
    if not examples.is_dir():
        _fail(f"{examples}: error: no such folder of ILP sketches (run from the repository or give --examples)")
    chosen = ilp.select(ilp.find_tasks(examples), tasks)
    if not chosen:
        _fail(f"error: no task matches {', '.join(tasks or [])}")
    with progress_bar(len(chosen) * seeds, quiet) as tell:
        # the JSON is rewritten after every run, so that an interrupted benchmark keeps what it finished
        checkpoint = (lambda report: write_json(json_path, report)) if json_path is not None else None
        result = ilp.run(chosen, seeds, max_iters, time_limit, tell, device, jobs, checkpoint)
    table = ilp.markdown(result, ilp.published_rates(spec or examples / "dilp" / "published_rates.json"))
    typer.echo(table + f"\ntotal CPU time {result['cpu_seconds']:.1f} s")
    if json_path is not None:
        write_json(json_path, result)
    if markdown_path is not None:
        write_bytes_atomic(markdown_path, table.encode())


@bench_app.command("scale")
def bench_scale(
    sizes: Annotated[str, typer.Option(help="People in the random forest, comma-separated.")] = "100,300,1000",
    seed: Annotated[int, typer.Option(min=0, help="Seed of the forest and of training.")] = 0,
    train: Annotated[bool, typer.Option("--train/--no-train", help="Also train each size.")] = True,
    time_limit: Annotated[float, typer.Option(min=1.0, help="Seconds of training per size.")] = 600.0,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the rows as JSON.")] = None,
    plot_path: Annotated[Path | None, typer.Option("--plot", help="Compile and train time against N, log-log.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    kg: Annotated[
        Path | None,
        typer.Option("--kg", exists=True, file_okay=False, help="Instead: a knowledge graph in the Neural LP layout."),
    ] = None,
    target: Annotated[str, typer.Option(help="With --kg: the relation to learn.")] = "aunt",
    sample: Annotated[
        int | None,
        typer.Option(min=1, help="Sampled closed-world negatives per positive (default: forest none, --kg 2)."),
    ] = None,
    subgraph: SubgraphOption = None,
) -> None:
    """Compile and train reachability on random forests of growing size: time, memory, substitutions.
    With --kg, compile (and train) one relation of a knowledge graph from its other relations instead."""
    from nlndl.bench import scale

    _check_outputs(json_path, plot=plot_path)
    if kg is not None:
        if not (kg / "facts.txt").is_file():
            _fail(f"{kg}: error: no facts.txt (the Neural LP layout: facts.txt, train.txt, ...)")
        try:
            row = scale.measure_kg(kg, target, sample or 2, seed, train, time_limit, subgraph)
        except ValueError as exc:
            _fail(f"{kg}: error: {exc}")
        typer.echo(scale.kg_markdown(row))
        if json_path is not None:
            write_json(json_path, row)
        return
    numbers = _numbers(sizes, "--sizes", int)
    if any(n < 2 for n in numbers):
        typer.echo("error: --sizes are at least 2", err=True)
        raise typer.Exit(2)
    with progress_bar(len(numbers), quiet) as tell:
        report = scale.run(numbers, seed, train, time_limit, tell, sample, subgraph)
    _publish_report(scale.markdown(report), report, json_path, plot_path, "plot_scale")


def _publish_report(
    table: str, report: dict, json_path: Path | None, plot_path: Path | None = None, plot: str = ""
) -> None:
    """A bench's table on stdout, then its JSON and its figure (``nlndl.bench.plot.<plot>``) where asked."""
    typer.echo(table)
    if json_path is not None:
        write_json(json_path, report)
    if plot_path is not None:
        from nlndl.bench import plot as plots

        getattr(plots, plot)(report, plot_path)


@bench_app.command("noise")
def bench_noise(
    tasks: Annotated[
        list[str] | None, typer.Option(help="Task folders under --examples (repeatable); default: six bundled ones.")
    ] = None,
    levels: Annotated[str, typer.Option(help="Fractions of labels flipped, comma-separated.")] = "0,0.05,0.1,0.2,0.3",
    seeds: Annotated[int, typer.Option(min=1, help="Seeds per task and level (each flips and trains).")] = 10,
    time_limit: Annotated[float, typer.Option(min=1.0, help="Seconds of training per run.")] = 60.0,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write every run as JSON.")] = None,
    plot_path: Annotated[Path | None, typer.Option("--plot", help="Runs right against the noise.")] = None,
    examples: Annotated[Path, typer.Option(help="The folder of bundled ILP sketches.")] = Path("examples/ilp"),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Bundled tasks with a fraction of their labels flipped (positives and as many negatives, seeded), learned
    with --noise at that fraction: the runs whose rules clingo finds right on the clean labels."""
    from nlndl.bench import noise

    _check_outputs(json_path, plot=plot_path)
    chosen = tuple(tasks or noise.TASKS)
    missing = [t for t in chosen if not (examples / t / "sketch.dl").is_file()]
    if missing:
        _fail(f"{examples / missing[0]}: error: no sketch.dl there (run from the repository or give --examples)")
    fractions = _numbers(levels, "--levels")
    if any(not 0 <= x <= 0.5 for x in fractions):
        typer.echo("error: --levels are fractions from 0 to 0.5", err=True)
        raise typer.Exit(2)
    with progress_bar(len(chosen) * len(fractions) * seeds, quiet) as tell:
        report = noise.run(examples, chosen, tuple(fractions), seeds, time_limit, tell)
    _publish_report(noise.markdown(report), report, json_path, plot_path, "plot_noise")


@bench_app.command("kg")
def bench_kg(
    directory: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="A graph in the Neural LP layout.")],
    relations: Annotated[
        list[str] | None, typer.Option("--relation", help="Relations to learn (repeatable); default: every one.")
    ] = None,
    learn: Annotated[bool, typer.Option("--learn/--baseline-only", help="Also learn each relation with nlndl.")] = True,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the negatives, the subgraph and training.")] = 0,
    time_limit: Annotated[float, typer.Option(min=1.0, help="Seconds of training per relation.")] = 60.0,
    noise: Annotated[float | None, typer.Option(min=0.0, max=0.5, help="train --noise for each relation.")] = 0.1,
    subgraph: SubgraphOption = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the figures and rules as JSON.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Knowledge-graph completion on test.txt (filtered MRR, Hits@1/10, both directions, mean-rank ties): the
    path-rule baseline and nlndl's learned rules, each ranking by rule confidence, side by side."""
    from nlndl.bench import kg

    _check_outputs(json_path)
    if not (directory / "facts.txt").is_file() or not (directory / "test.txt").is_file():
        _fail(f"{directory}: error: needs facts.txt, train.txt and test.txt (the Neural LP layout)")
    names = relations or None
    try:
        total = len(names) if names else len(kg.Graph.read(directory).relations)
        with progress_bar(total, quiet) as tell:
            report = kg.run(directory, names, seed, time_limit, noise, subgraph, learn, tell)
    except ValueError as exc:
        _fail(f"{directory}: error: {exc}")
    _publish_report(kg.markdown(report), report, json_path)


@bench_app.command("fuzz")
def bench_fuzz(
    inputs: Annotated[int, typer.Option(min=1, help="Fuzz inputs to run.")] = 10_000,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the input stream.")] = 0,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the summary and failures as JSON.")] = None,
    examples: Annotated[Path, typer.Option(help="Bundled sketches to mutate.")] = Path("examples/ilp"),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Grammar-drawn and mutated sketches through compile and check: counts tracebacks, hangs and runaways."""
    from nlndl.bench import fuzz

    _check_outputs(json_path)
    if not examples.is_dir():
        _fail(f"{examples}: error: no such folder of ILP sketches (run from the repository or give --examples)")
    with progress_bar(-(-inputs // fuzz.REPORT_EVERY), quiet) as tell:
        report = fuzz.run(inputs, seed, examples, tell)
    summary = report.to_json()
    typer.echo(
        f"{summary['inputs']:,} inputs in {summary['seconds']:.0f} s: {summary['tracebacks']} tracebacks, "
        f"{report.hangs} hangs over {fuzz.HANG_SECONDS:g} s, {report.memory} over 4 GiB; slowest input "
        f"{summary['slowest_seconds']:.2f} s; exit codes {summary['exit_codes']}"
    )
    if json_path is not None:
        write_json(json_path, summary)
    raise typer.Exit(0 if not report.failures else 1)


@bench_app.command("runtime")
def bench_runtime(
    quick: Annotated[bool, typer.Option("--quick", help="Smaller programs only.")] = False,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the figures as JSON.")] = None,
    restarts: Annotated[int, typer.Option(min=1, help="Restarts per step.")] = 8,
    steps: Annotated[int, typer.Option(min=1, help="Cap on forward-chaining steps T.")] = 10,
    iters: Annotated[int, typer.Option(min=1, help="Timed training steps per case.")] = 5,
    busy: Annotated[
        bool, typer.Option("--busy", help="Also measure each case beside one competing CPU-bound process.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Time per training step and gathered atom-slots per second (CPU, and CUDA when available)."""
    import torch

    from nlndl.bench import runtime

    _check_outputs(json_path)
    devices = ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)
    n_cases = len(runtime.cases(quick)) * len(devices) * (2 if busy else 1)
    with progress_bar(n_cases, quiet) as tell:
        rows = runtime.run(quick, devices, restarts, steps, iters, tell, busy)
    table = Table(
        title=f"Runtime: {restarts} restarts, T <= {steps}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads"
    )
    for column in (
        "case",
        "load",
        "wait policy",
        "device",
        "scatter",
        "substitutions",
        "inputs",
        "T",
        "ms / step",
        "atom-slots / s",
        "in torch ops",
    ):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["case"],
            r["load"],
            r["wait_policy"],
            r["device"],
            r["scatter"],
            f"{r['substitutions']:,}",
            str(r["inputs"]),
            str(r["steps"]),
            f"{r['seconds_per_step'] * 1000:.1f}",
            f"{r['atom_slots_per_second']:.3g}",
            f"{r['kernel_fraction']:.0%}",
        )
    stdout.print(table)
    if json_path is not None:
        write_json(json_path, {"torch": torch.__version__, "rows": rows})
        stdout.print(f"wrote {json_path}")


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

    _check_outputs(json_path, plot=plot_path)
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


@bench_app.command("ldpc")
def bench_ldpc(
    quick: Annotated[bool, typer.Option("--quick", help="Reduced run (under 5 minutes on 2 CPU cores).")] = False,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write all results as JSON.")] = None,
    plot_path: Annotated[Path | None, typer.Option("--plot", help="Write BER vs iterations as PNG.")] = None,
    markdown_path: Annotated[Path | None, typer.Option("--markdown", help="Write the BER table as markdown.")] = None,
    steps: Annotated[int | None, typer.Option(min=1, help="Training steps per learned decoder.")] = None,
    codewords: Annotated[int | None, typer.Option(min=1, help="Test codewords per erasure probability.")] = None,
    device: Annotated[str, typer.Option(help="Device of the throughput measurement: cpu or cuda.")] = "cpu",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress line.")] = False,
) -> None:
    """LDPC-NLN vs LDPC-MLP vs BP vs ML over the erasure channel (paper section 4)."""
    from dataclasses import replace

    from nlndl.bench import ldpc as bench

    _check_outputs(json_path, markdown_path, plot=plot_path)
    _check_device(device)
    cfg = bench.LdpcBenchConfig.quick() if quick else bench.LdpcBenchConfig()
    cfg = replace(cfg, steps=steps or cfg.steps, codewords=codewords or cfg.codewords)
    try:
        with status_line(quiet) as tell:
            report = bench.run(cfg, device, tell)
    except MemoryError as exc:
        _fail(f"error: {exc}")
    stdout.print(bench.markdown(report), markup=False)
    for part, outputs in report["formulas"].items():
        for name, text in outputs.items():
            stdout.print(f"NLN {part}.{name} = {text}", markup=False)
    speed = report["throughput"]
    stdout.print(
        "codewords/s (batch {batch}, t = {iterations}, {device}): ".format(**speed)
        + ", ".join(f"{k} {v:,.0f}" for k, v in speed["codewords_per_second"].items())
    )
    if json_path is not None:
        write_json(json_path, report)
        stdout.print(f"wrote {json_path}")
    if markdown_path is not None:
        write_bytes_atomic(markdown_path, bench.markdown(report).encode())
        stdout.print(f"wrote {markdown_path}")
    if plot_path is not None:
        from nlndl.bench.plot import plot_ldpc

        plot_ldpc(report, plot_path)
        stdout.print(f"wrote {plot_path}")


def main() -> None:
    """Entry point of the ``nlndl`` console script: every failure ends in a one-line message and an exit code,
    never a traceback (``NLNDL_TRACEBACK=1`` shows one for an internal error)."""
    import os

    try:
        app()
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)
    except MemoryError:
        typer.echo("error: out of memory (lower --memory-limit so that nlndl refuses such work up front)", err=True)
        sys.exit(1)
    except OutputError as exc:
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
