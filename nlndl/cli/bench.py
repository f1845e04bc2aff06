"""``nlndl bench ...``: the paper's experiments and the performance benchmarks, each printing its figures."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nlndl.cli.common import (
    KGJobsOption,
    KGNoiseOption,
    KGPatienceOption,
    KGRelations,
    KGSubgraphOption,
    KGTimeOption,
    LayoutKind,
    LayoutOption,
    QuietOption,
    SubgraphOption,
    bench_app,
    check_outputs,
    device_option,
    fail,
    finite,
    numbers,
    publish_report,
    record,
    reported,
    size_option,
    stdout,
    subgraph_value,
    usage,
)
from nlndl.defaults import (
    COMPILE_MEMORY,
    KG_JOBS,
    KG_NOISE,
    KG_PATH_LENGTH,
    KG_POOL_PATIENCE,
    KG_TIME_LIMIT,
    MAX_ITERS,
    MAX_SEED,
    SUBGRAPH,
)
from nlndl.output import write_bytes_atomic, write_json
from nlndl.progress import progress_bar, status_line

JsonPath = Annotated[
    Path | None,
    typer.Option("--record", "--json", help="Write the results to this JSON record (--json: its earlier name)."),
]
Examples = Annotated[
    Path | None, typer.Option(help="The folder of bundled ILP sketches (default: the repository's examples/ilp).")
]
NO_EXAMPLES = "error: no such folder of ILP sketches (give --examples: the repository's examples/ilp)"


def bundled_examples() -> Path:
    """The bundled ILP sketches: ``examples/ilp`` here, else beside the package (an install from a checkout),
    so that the benches run from any directory."""
    here = Path("examples/ilp")
    beside = Path(__file__).resolve().parents[2] / "examples" / "ilp"
    return here if here.is_dir() or not beside.is_dir() else beside


@bench_app.command("ilp")
@reported
def bench_ilp(
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            "--tasks",
            help="Task names or folders (repeatable); default: the dILP tasks, Addition, Multiplication and "
            "Sorting (the cons/3 list tasks, list_last, list_member, list_suffix, list_length: when named).",
        ),
    ] = None,
    seeds: Annotated[int, typer.Option(min=1, help="Seeds per task.")] = 10,
    json_path: JsonPath = None,
    markdown_path: Annotated[Path | None, typer.Option("--markdown", help="Write the results as a table.")] = None,
    examples: Examples = None,
    spec: Annotated[
        Path | None,
        typer.Option(help="dilp_tasks.json for the published rates; default: the copy in EXAMPLES/dilp."),
    ] = None,
    max_iters: Annotated[int, typer.Option(min=1, help="Iteration limit per run.")] = MAX_ITERS,
    time_limit: Annotated[float | None, typer.Option(min=0.0, callback=finite, help="Seconds per run.")] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda: where every run trains.")] = "cpu",
    jobs: Annotated[
        int,
        typer.Option(
            min=1, help="Runs at a time, in worker processes sharing the CPU threads; results do not depend on it."
        ),
    ] = 1,
    quiet: QuietOption = False,
) -> None:
    """Every bundled ILP task from several seeds; a run counts only when clingo verifies its rules."""
    examples = examples or bundled_examples()
    from nlndl.bench import ilp

    check_outputs(json_path, markdown_path)
    device_option(device)
    if not examples.is_dir():
        fail(f"{examples}: {NO_EXAMPLES}")
    found = ilp.find_tasks(examples)
    unknown = ilp.unmatched(found, tasks)
    if unknown:
        names = ", ".join(sorted({t.sketch.parent.name for t in found}))
        fail(f"error: no task matches {', '.join(unknown)} (the tasks' folders: {names})")
    chosen = ilp.select(found, tasks)
    with progress_bar(len(chosen) * seeds, quiet) as tell:
        # the JSON is rewritten after every run, so that an interrupted benchmark keeps what it finished
        checkpoint = (lambda report: write_json(json_path, record(report))) if json_path is not None else None
        result = ilp.run(chosen, seeds, max_iters, time_limit, tell, device, jobs, checkpoint)
    table = ilp.markdown(result, ilp.published_rates(spec or examples / "dilp" / "published_rates.json"))
    typer.echo(table + f"\ntotal CPU time {result['cpu_seconds']:.1f} s")
    if json_path is not None:
        write_json(json_path, record(result))
    if markdown_path is not None:
        write_bytes_atomic(markdown_path, table.encode())


@bench_app.command("scale")
@reported
def bench_scale(
    sizes: Annotated[
        list[str] | None, typer.Option(help="People in the random forest (repeatable); default: 100,300,1000.")
    ] = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the forest and of training.")] = 0,
    train: Annotated[bool, typer.Option("--train/--no-train", help="Also train each size.")] = True,
    time_limit: Annotated[float, typer.Option(min=1.0, callback=finite, help="Seconds of training per size.")] = 600.0,
    json_path: JsonPath = None,
    plot_path: Annotated[Path | None, typer.Option("--plot", help="Compile and train time against N, log-log.")] = None,
    quiet: QuietOption = False,
    kg: Annotated[
        Path | None,
        typer.Option("--kg", exists=True, file_okay=False, help="Instead: a knowledge graph in the Neural LP layout."),
    ] = None,
    target: Annotated[str, typer.Option("--relation", "--target", help="With --kg: the relation to learn.")] = "aunt",
    sample: Annotated[
        int | None,
        typer.Option(min=1, help="Sampled closed-world negatives per positive (default: forest none, --kg 2)."),
    ] = None,
    subgraph: SubgraphOption = SUBGRAPH,
) -> None:
    """Compile and train reachability on random forests of growing size: time, memory, substitutions.
    With --kg, compile (and train) one relation of a knowledge graph from its other relations instead."""
    from nlndl.bench import scale

    check_outputs(json_path, plot=plot_path)
    subgraph = subgraph_value(subgraph)
    if kg is not None:
        if not (kg / "facts.txt").is_file():
            fail(f"{kg}: error: no facts.txt (the Neural LP layout: facts.txt, train.txt, ...)")
        try:
            row = scale.measure_kg(kg, target, sample or 2, seed, train, time_limit, subgraph)
        except ValueError as exc:
            fail(f"{kg}: error: {exc}")
        publish_report(scale.kg_markdown(row), row, json_path)
        return
    people = numbers(sizes, "--sizes", "100,300,1000", int)
    if any(n < 2 for n in people):
        usage("--sizes are at least 2")
    with progress_bar(len(people), quiet) as tell:
        report = scale.run(people, seed, train, time_limit, tell, sample, subgraph)
    publish_report(scale.markdown(report), report, json_path, plot_path, "plot_scale")


@bench_app.command("startup")
@reported
def bench_startup(
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Bundled task folders (repeatable); default: five small ones.")
    ] = None,
    repeats: Annotated[int, typer.Option(min=1, help="Runs of each command (medians are reported).")] = 5,
    examples: Examples = None,
    json_path: JsonPath = None,
    quiet: QuietOption = False,
) -> None:
    """Whole-process nlndl train of small bundled tasks against the import floor (python -c "import torch,
    clingo"), alternately, each in a fresh process: medians and their ratio."""
    examples = examples or bundled_examples()
    from nlndl.bench import startup

    check_outputs(json_path)
    names = tasks or list(startup.TASKS)
    missing = [n for n in names if not (examples / n / "sketch.dl").is_file()]
    if missing:
        fail(f"{examples / missing[0]}: error: no sketch.dl ({NO_EXAMPLES})")
    with progress_bar(len(names), quiet) as tell:
        report = startup.measure(examples, names, repeats, tell)
    publish_report(startup.markdown(report), report, json_path)


@bench_app.command("shard")
@reported
def bench_shard(
    sketch: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The sketch to train.")],
    processes: Annotated[int, typer.Option(min=2, help="Processes of the sharded run (torchrun, gloo).")] = 2,
    max_iters: Annotated[int, typer.Option(min=1, help="Iterations of each run (a time limit would differ).")] = 100,
    restarts: Annotated[
        int | None, typer.Option(min=1, help="Restarts of both runs (default: each fits its own).")
    ] = None,
    layout: LayoutOption = LayoutKind.auto,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of both runs.")] = 0,
    json_path: JsonPath = None,
) -> None:
    """Train one sketch with 1 process and with N sharing its examples (torchrun), side by side: time per
    iteration, peak memory of the largest process, and whether they learned the same."""
    from nlndl.bench import shard

    check_outputs(json_path)
    options = ["--layout", layout.value] + (["--restarts", str(restarts)] if restarts else [])
    report = shard.run(sketch, processes, max_iters, options, seed)
    publish_report(shard.markdown(report), report, json_path)


@bench_app.command("noise")
@reported
def bench_noise(
    tasks: Annotated[
        list[str] | None, typer.Option(help="Task folders under --examples (repeatable); default: six bundled ones.")
    ] = None,
    levels: Annotated[
        list[str] | None, typer.Option(help="Fractions of labels flipped (repeatable); default: 0,0.05,0.1,0.2,0.3.")
    ] = None,
    seeds: Annotated[int, typer.Option(min=1, help="Seeds per task and level (each flips and trains).")] = 10,
    time_limit: Annotated[float, typer.Option(min=1.0, callback=finite, help="Seconds of training per run.")] = 60.0,
    json_path: Annotated[
        Path | None,
        typer.Option("--record", "--json", help="Write every run to this JSON record (--json: its earlier name)."),
    ] = None,
    plot_path: Annotated[Path | None, typer.Option("--plot", help="Runs right against the noise.")] = None,
    examples: Examples = None,
    quiet: QuietOption = False,
) -> None:
    """Bundled tasks with a fraction of their labels flipped (positives and as many negatives, seeded), learned
    with --noise at that fraction: the runs whose rules clingo finds right on the clean labels."""
    examples = examples or bundled_examples()
    from nlndl.bench import noise

    check_outputs(json_path, plot=plot_path)
    chosen = tuple(tasks or noise.TASKS)
    missing = [t for t in chosen if not (examples / t / "sketch.dl").is_file()]
    if missing:
        fail(f"{examples / missing[0]}: error: no sketch.dl there ({NO_EXAMPLES[len('error: ') :]})")
    fractions = numbers(levels, "--levels", "0,0.05,0.1,0.2,0.3")
    if any(not 0 <= x <= 0.5 for x in fractions):
        usage("--levels are fractions from 0 to 0.5")
    with progress_bar(len(chosen) * len(fractions) * seeds, quiet) as tell:
        report = noise.run(examples, chosen, tuple(fractions), seeds, time_limit, tell)
    publish_report(noise.markdown(report), report, json_path, plot_path, "plot_noise")


@bench_app.command("kg")
@reported
def bench_kg(
    directory: Annotated[
        Path,
        typer.Argument(exists=True, file_okay=False, help="A graph: train/valid/test, or Neural LP's with facts.txt."),
    ],
    relations: KGRelations = None,
    learn: Annotated[bool, typer.Option("--learn/--baseline-only", help="Also learn each relation with nlndl.")] = True,
    seed: Annotated[
        int, typer.Option(min=0, max=MAX_SEED, help="Seed of the negatives, the subgraph and training.")
    ] = 0,
    time_limit: KGTimeOption = KG_TIME_LIMIT,
    patience: KGPatienceOption = KG_POOL_PATIENCE,
    job_count: KGJobsOption = KG_JOBS,
    noise: KGNoiseOption = KG_NOISE,
    subgraph: KGSubgraphOption = None,
    device: Annotated[str, typer.Option(help="cpu, cuda or cuda:N: where each relation is trained.")] = "cpu",
    memory_limit: Annotated[
        str, typer.Option(help="Refuse triple files or sketches larger than this.")
    ] = COMPILE_MEMORY,
    path_length: Annotated[
        int,
        typer.Option(
            min=1,
            max=3,
            help="The longest counted path rule, in body atoms: the baseline's, and those ranked with nlndl's.",
        ),
    ] = KG_PATH_LENGTH,
    split: Annotated[
        str, typer.Option(help="The triples to rank: test, or valid to tune a setting without seeing test.")
    ] = "test",
    fit_weights: Annotated[
        bool,
        typer.Option(
            "--fit-weights",
            help="Also rank by the counted rules with weights fitted on held-out training triples "
            "(nlndl.rule_weights).",
        ),
    ] = False,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--record", "--json", help="Write the figures and rules to this JSON record (--json: its earlier name)."
        ),
    ] = None,
    quiet: QuietOption = False,
) -> None:
    """Knowledge-graph completion on test.txt (filtered MRR, Hits@1/10, both directions, mean-rank ties): the
    path-rule baseline (by max-aggregation) and nlndl's learned clauses with the counted rules (by
    top-aggregation), side by side, other aggregations beside them. Reads the Neural LP layout and the standard
    one (train/valid/test)."""
    from nlndl.bench import kg
    from nlndl.kg_rules import Graph, KGConfig, checked_relations

    check_outputs(json_path)
    kg.check_layout(directory)
    config = KGConfig(
        seed=seed,
        time_limit=time_limit,
        noise=noise,
        subgraph=subgraph,
        device=device_option(device),
        memory_limit=size_option(memory_limit),
        pool_patience=patience,
        jobs=job_count,
        path_length=path_length,
        fit_weights=fit_weights,
    )
    graph = Graph.read(directory, config.memory_limit)
    if split not in ("test", "valid"):
        usage(f"--split {split}: expected test or valid")
    total = len(kg.tested_relations(graph, checked_relations(graph, relations, directory), directory, split))
    with progress_bar(total, quiet) as tell:
        report = kg.run(directory, relations or None, config, learn, tell, graph, split)
    if report is not None:  # None: a torchrun rank other than 0
        publish_report(kg.markdown(report), report, json_path)


@bench_app.command("fuzz")
@reported
def bench_fuzz(
    inputs: Annotated[int, typer.Option(min=1, help="Fuzz inputs to run.")] = 10_000,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the input stream.")] = 0,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--record", "--json", help="Write the summary and failures to this JSON record (--json: its earlier name)."
        ),
    ] = None,
    examples: Annotated[Path | None, typer.Option(help="Bundled sketches to mutate (default: examples/ilp).")] = None,
    quiet: QuietOption = False,
) -> None:
    """Grammar-drawn and mutated sketches through compile and check: counts tracebacks, hangs and runaways."""
    examples = examples or bundled_examples()
    from nlndl.bench import fuzz

    check_outputs(json_path)
    if not examples.is_dir():
        fail(f"{examples}: {NO_EXAMPLES}")
    with progress_bar(-(-inputs // fuzz.REPORT_EVERY), quiet) as tell:
        report = fuzz.run(inputs, seed, examples, tell, app="nlndl.cli:app")
    summary = report.to_json()
    typer.echo(
        f"{summary['inputs']:,} inputs in {summary['seconds']:.0f} s: {summary['tracebacks']} tracebacks, "
        f"{report.hangs} hangs over {fuzz.HANG_SECONDS:g} s, {report.memory} over 4 GiB, {report.changed} with "
        "a user's files changed; slowest input "
        f"{summary['slowest_seconds']:.2f} s; exit codes {summary['exit_codes']}"
    )
    if json_path is not None:
        write_json(json_path, record(summary))
    raise typer.Exit(0 if not report.failures else 1)


@bench_app.command("runtime")
@reported
def bench_runtime(
    quick: Annotated[bool, typer.Option("--quick", help="Smaller programs only.")] = False,
    json_path: Annotated[
        Path | None,
        typer.Option("--record", "--json", help="Write the figures to this JSON record (--json: its earlier name)."),
    ] = None,
    restarts: Annotated[int, typer.Option(min=1, help="Restarts per step.")] = 8,
    steps: Annotated[int, typer.Option(min=1, help="Cap on forward-chaining steps T.")] = 10,
    iters: Annotated[int, typer.Option(min=1, help="Timed training steps per case.")] = 5,
    busy: Annotated[
        bool, typer.Option("--busy", help="Also measure each case beside one competing CPU-bound process.")
    ] = False,
    quiet: QuietOption = False,
) -> None:
    """Time per training step and gathered atom-slots per second (CPU, and CUDA when available)."""
    import torch

    from nlndl.bench import runtime

    check_outputs(json_path)
    devices = ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)
    with progress_bar(len(runtime.cases(quick)) * len(devices) * (2 if busy else 1), quiet) as tell:
        rows = runtime.run(quick, devices, restarts, steps, iters, tell, busy)
    stdout.print(runtime.table(rows, restarts, steps))
    if json_path is not None:
        write_json(json_path, record({"torch": torch.__version__, "rows": rows}))
        stdout.print(f"wrote {json_path}")


@bench_app.command("boolean")
@reported
def bench_boolean(
    quick: Annotated[bool, typer.Option("--quick", help="Reduced run (under 5 minutes on 2 CPU cores).")] = False,
    json_path: Annotated[
        Path | None,
        typer.Option(
            "--record", "--json", help="Write all runs and curves to this JSON record (--json: its earlier name)."
        ),
    ] = None,
    plot_path: Annotated[Path | None, typer.Option("--plot", help="Write the DNF and parity curves as PNG.")] = None,
    seeds: Annotated[int | None, typer.Option(min=1, help="Seeds per setting (both experiments).")] = None,
    dnf_steps: Annotated[int | None, typer.Option(min=1, help="Training steps per DNF run.")] = None,
    xor_steps: Annotated[int | None, typer.Option(min=1, help="Training steps per parity run.")] = None,
    xor_init: Annotated[
        str | None, typer.Option(help="XOR neuron init, e.g. 'normal:std=0.1' or 'constant:mean=0'.")
    ] = None,
    threads: Annotated[int, typer.Option(min=0, help="torch CPU threads (0: torch's default).")] = 0,
    quiet: QuietOption = False,
) -> None:
    """NLN vs MLP on random DNF functions and on parity (paper section 3)."""
    from nlndl.bench import boolean

    check_outputs(json_path, plot=plot_path)
    if xor_init is not None:
        try:
            boolean.Init.parse(xor_init)
        except ValueError as exc:
            usage(f"--xor-init: {exc}")
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
    stdout.print(boolean.table(results))
    if json_path is not None:
        write_json(json_path, record(results))
        stdout.print(f"wrote {json_path}")
    if plot_path is not None:
        from nlndl.bench.plot import plot_boolean

        plot_boolean(results, plot_path)
        stdout.print(f"wrote {plot_path}")


@bench_app.command("ldpc")
@reported
def bench_ldpc(
    quick: Annotated[bool, typer.Option("--quick", help="Reduced run (under 5 minutes on 2 CPU cores).")] = False,
    json_path: Annotated[
        Path | None,
        typer.Option("--record", "--json", help="Write all results to this JSON record (--json: its earlier name)."),
    ] = None,
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

    check_outputs(json_path, markdown_path, plot=plot_path)
    device_option(device)
    cfg = bench.LdpcBenchConfig.quick() if quick else bench.LdpcBenchConfig()
    cfg = replace(cfg, steps=steps or cfg.steps, codewords=codewords or cfg.codewords)
    try:
        with status_line(quiet) as tell:
            report = bench.run(cfg, device, tell)
    except MemoryError as exc:
        fail(f"error: {exc}")
    table = bench.markdown(report)
    stdout.print(table, markup=False)
    for part, outputs in report["formulas"].items():
        for name, text in outputs.items():
            stdout.print(f"NLN {part}.{name} = {text}", markup=False)
    speed = report["throughput"]
    stdout.print(
        "codewords/s (batch {batch}, t = {iterations}, {device}): ".format(**speed)
        + ", ".join(f"{k} {v:,.0f}" for k, v in speed["codewords_per_second"].items())
    )
    if json_path is not None:
        write_json(json_path, record(report))
        stdout.print(f"wrote {json_path}")
    if markdown_path is not None:
        write_bytes_atomic(markdown_path, table.encode())
        stdout.print(f"wrote {markdown_path}")
    if plot_path is not None:
        from nlndl.bench.plot import plot_ldpc

        plot_ldpc(report, plot_path)
        stdout.print(f"wrote {plot_path}")
