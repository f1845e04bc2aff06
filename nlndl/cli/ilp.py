"""``nlndl compile``, ``train``, ``export`` and ``check``: learning Datalog programs from sketches."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from nlndl.cli.common import (
    Background,
    ClassWeight,
    FactDir,
    JsonOption,
    LayoutKind,
    LayoutOption,
    QuietOption,
    SubgraphOption,
    app,
    device_option,
    finite,
    reported,
    saved,
    size_option,
    subgraph_line,
    subgraph_value,
    warn,
)
from nlndl.defaults import (
    CLASS_WEIGHTS,
    COMPILE_MEMORY,
    MAX_ITERS,
    MAX_NOISE,
    MAX_SEED,
    MAX_STEPS,
    MIN_RESTARTS,
    NOISE_PATIENCE,
    OUTPUT_DIR,
    RESTART_TIERS,
    SUBGRAPH,
    TRAIN_MEMORY,
)
from nlndl.errors import Interrupted

if TYPE_CHECKING:
    from nlndl.verify import Score

Sketch = Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The program sketch (.dl).")]
EXAMPLES_SHOWN = 3  # missed and wrongly derived examples an unsolved run names (<name>.json lists them all)


class Show(StrEnum):
    depgraph = "depgraph"
    strata = "strata"
    ir = "ir"


class Dialect(StrEnum):
    souffle = "souffle"
    clingo = "clingo"


@app.command("compile")
@reported
def compile_command(
    sketch: Sketch,
    fact_dir: FactDir = None,
    output: Annotated[
        Path | None,
        typer.Option("-D", "--output-dir", "-o", "--output", help="Save the compiled program to this directory."),
    ] = None,
    json_summary: JsonOption = False,
    show: Annotated[list[Show] | None, typer.Option(help="Also print: depgraph, strata or ir.")] = None,
    memory_limit: Annotated[str, typer.Option(help="Refuse index arrays larger than this.")] = COMPILE_MEMORY,
    steps: Annotated[
        int | None, typer.Option(min=1, max=MAX_STEPS, help="Forward-chaining steps (default: derived).")
    ] = None,
    background: Background = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of sampled closed-world negatives.")] = 0,
    layout: LayoutOption = LayoutKind.auto,
    subgraph: SubgraphOption = SUBGRAPH,
) -> None:
    """Check a program sketch and compile it to index arrays."""
    from nlndl import jobs
    from nlndl.jobs import ilp as ilp_jobs
    from nlndl.show import show_depgraph, show_ir, show_strata

    limit = size_option(memory_limit)
    target = jobs.output_dir(output, writer="compile") if output is not None else None
    program = ilp_jobs.compile_program(
        sketch,
        fact_dir,
        memory_limit=limit,
        steps=steps,
        background=background or (),
        seed=seed,
        layout=layout.value,
        subgraph=subgraph_value(subgraph),
    )
    warn(program.warnings)
    summary = saved(program.summary(), target, program.save)
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
        lines += ["  " + subgraph_line(part) for part in summary["subgraph"]]
        if output is not None:
            lines.append(f"  saved to {output}")
        typer.echo("\n".join(lines))
    for what in show or []:
        dump = {Show.depgraph: show_depgraph, Show.strata: show_strata, Show.ir: show_ir}[what]
        typer.echo(f"-- {what.value}\n{dump(program)}")


@app.command("train")
@reported
def train_command(
    sketch: Sketch,
    fact_dir: FactDir = None,
    output_dir: Annotated[
        Path, typer.Option("-D", "--output-dir", help="Where to write <name>.dl, <name>.lp and <name>.json.")
    ] = Path(OUTPUT_DIR),
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Random seed (same seed, same result on CPU).")] = 0,
    restarts: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Independent initialisations trained together (default: by index entries x steps, "
            + ", ".join(f"{k} up to {limit:,}" for limit, k in RESTART_TIERS)
            + f", else {MIN_RESTARTS}).",
        ),
    ] = None,
    max_iters: Annotated[int, typer.Option(min=1, help="Iteration limit.")] = MAX_ITERS,
    time_limit: Annotated[
        float | None, typer.Option(min=0.0, callback=finite, help="Wall-clock limit in seconds.")
    ] = None,
    steps: Annotated[
        int | None, typer.Option(min=1, max=MAX_STEPS, help="Forward-chaining steps (default: the sketch's).")
    ] = None,
    device: Annotated[str, typer.Option(help="cpu or cuda (the same code runs on both).")] = "cpu",
    class_weight: Annotated[
        ClassWeight,
        typer.Option(
            help="A positive example's weight in the loss, against a negative's, with P positives and N "
            "negatives: sqrt(N/P), N/P (balanced: each class half the loss) or 1 (none). A restart that stalls "
            "with clauses deriving no negative example weighs balanced until it is drawn anew."
        ),
    ] = CLASS_WEIGHTS[0],
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue from the checkpoint of an interrupted run.")
    ] = False,
    json_summary: JsonOption = False,
    quiet: QuietOption = False,
    memory_limit: Annotated[
        str, typer.Option(help="Refuse compiling or training that is estimated to need more memory than this.")
    ] = TRAIN_MEMORY,
    background: Background = None,
    layout: LayoutOption = LayoutKind.auto,
    subgraph: SubgraphOption = SUBGRAPH,
    noise: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=MAX_NOISE,
            callback=finite,
            help="Labels may be wrong: accept rules that clingo finds wrong on at most this fraction of the "
            "training examples (fewest mistakes, then fewest literals; stops once the best has not improved "
            f"for {NOISE_PATIENCE} iterations). Default: the sketch's .noise, else none.",
        ),
    ] = None,
    validation: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=MAX_NOISE,
            callback=finite,
            help="Hold out this fraction of each class of examples (drawn with --seed) and report the rules' "
            "precision, recall and F1 on them, by clingo.",
        ),
    ] = None,
) -> None:
    """Learn the sketch's predicates; write the verified rules as Soufflé and clingo Datalog.

    Exits 0 when clingo verifies the rules on every world (with --noise: within the allowance), 1 otherwise
    (printing the best rules found).
    """
    from nlndl.jobs import ilp as ilp_jobs
    from nlndl.progress import training_bar

    talk = not (quiet or json_summary)
    plan = ilp_jobs.plan_training(
        sketch,
        fact_dir,
        output_dir,
        seed=seed,
        restarts=restarts,
        max_iters=max_iters,
        time_limit=time_limit,
        steps=steps,
        device=device_option(device),
        class_weight=ClassWeight(class_weight).value,
        resume=resume,
        memory_limit=size_option(memory_limit),
        background=background or (),
        layout=layout.value,
        subgraph=subgraph_value(subgraph),
        noise=noise,
        validation=validation or None,
    )
    talk = talk and plan.leader  # under torchrun, rank 0 alone reports
    warn(plan.program.warnings)
    if talk:
        warn([subgraph_line(part) for part in plan.program.summary()["subgraph"]])
        warn(plan.notes)
    try:
        with training_bar(max_iters, plan.config.chain.restarts, not talk, time_limit, plan.faster) as progress:
            run = plan.run(progress)
    except Interrupted as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(exc.code) from None
    result, stem = run.result, run.stem
    if not plan.leader:  # rank 0's exit code is torchrun's
        raise typer.Exit(0)
    if json_summary:
        keys = ("solved", "accepted", "seconds", "iterations", "restarts", "rules", "accuracy", "validation")
        keys += ("subgraph_grown", "subgraph_constants")
        typer.echo(json.dumps({k: run.record[k] for k in keys}))
    else:
        status = "solved (verified by clingo)" if result.solved else "NOT solved"
        if result.accepted and not result.solved:
            status = f"accepted under noise {result.noise:g} (verified by clingo)"
        typer.echo(
            f"{stem}: {status} in {result.seconds:.2f} s, {result.iterations} iterations, "
            f"{result.restarts} restarts, seed {seed}"
        )
        for text in result.rule_texts():
            typer.echo(f"  {text}")
        if result.grown:
            whole = plan.program.summary()["subgraph"]
            sizes = ", ".join(f"{k:,} of {w['of']:,}" for k, w in zip(result.trained_on, whole, strict=True))
            times = "once" if result.grown == 1 else f"{result.grown} times"
            typer.echo(f"  the subgraph grew from counterexamples {times}, to {sizes} constants")
        score = result.score
        if result.accepted and not result.solved:
            typer.echo(
                f"  wrong on {score.mistakes:,} of {score.positives + score.negatives:,} training examples "
                f"({score.false_negatives:,} positives missed, {score.false_positives:,} negatives "
                f"derived): precision {score.precision:.3f}, recall {score.recall:.3f}, F1 {score.f1:.3f}"
            )
        elif not result.solved:
            where = "" if score.unchecked is not None else " on the examples"
            typer.echo(f"  best rules: {score.quality()}{where}")
            for count, kind, atoms in (
                (score.false_negatives, "positive examples missed", score.missed),
                (score.false_positives, "negative examples derived", score.wrong),
            ):
                if count:
                    shown = ", ".join(atoms[:EXAMPLES_SHOWN]) + (", ..." if count > EXAMPLES_SHOWN else "")
                    typer.echo(f"  {count:,} {kind}: {shown}")
            if result.noise:
                typer.echo(f"  {noise_line(result.noise, score)}")
            for p, ir in plan.program.learned.items():
                if ir.repeats_left_out:
                    typer.echo(
                        f"  {p}: {ir.repeats_left_out:,} candidate atoms that repeat a variable were left out; "
                        f"'.learn {p}(..., repeat=all)' adds them"
                    )
            if score.true_positives == 0 and score.unchecked is None:
                typer.echo(
                    "  no positive example was derived: a clause's atoms hold variables only, and its head's are "
                    "all different, so a rule that tests a constant or two equal arguments reads them through "
                    "facts (red(X) :- color(X, red) as is_red(red). and red(X) :- color(X, C), is_red(C).; "
                    "max(A, B, A) :- gt(A, B) as eq(0, 0). eq(1, 1). ... and max(A, B, C) :- gt(A, B), "
                    "eq(C, A).; docs/language.md)"
                )
            limit = "--time-limit" if time_limit is not None and result.iterations < max_iters else "--max-iters"
            typer.echo(
                f"  to go on: --resume with a higher {limit} continues from {plan.checkpoint}; where no "
                "program within the .learn line's variables and terms can derive the missed examples, raise them"
            )
        held = result.validation
        if held is not None:
            typer.echo(
                f"  validation ({held.positives:,} positive and {held.negatives:,} negative examples held out, "
                f"clingo): precision {held.precision:.3f}, recall {held.recall:.3f}, F1 {held.f1:.3f}, "
                f"{held.mistakes:,} wrong"
            )
        typer.echo(
            f"  wrote {output_dir / (stem + '.dl')}, {output_dir / (stem + '.lp')}, {output_dir / (stem + '.json')}"
        )
    raise typer.Exit(0 if result.solved or result.accepted else 1)


def noise_line(noise: float, score: Score) -> str:
    """What ``--noise`` allows of each class, and the smallest setting (in hundredths) that accepts rules
    scored ``score``: where the labels are noisier than said, the rules may be right and the setting low."""
    from nlndl.allowance import Allowance

    allowed = Allowance.of_score(score, noise)
    classes = ((score.false_negatives, score.positives), (score.false_positives, score.negatives))
    fractions = [wrong / count for wrong, count in classes if count]
    needed = math.ceil(max(fractions, default=0.0) * 100 - 1e-9) / 100
    return (
        f"--noise {noise:g} lets a program miss {allowed.missed:,} of the {score.positives:,} positive examples and "
        f"derive {allowed.derived:,} of the {score.negatives:,} negative ones; where the labels are noisier than "
        f"that, --noise {needed:g} accepts these rules"
    )


@app.command("export")
@reported
def export_command(
    results: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="A <name>.json written by nlndl train.")],
    dialect: Annotated[Dialect, typer.Option("--format", help="souffle (.dl) or clingo (.lp).")] = Dialect.souffle,
) -> None:
    """Print saved learned rules as Soufflé or clingo Datalog."""
    from nlndl.jobs import ilp as ilp_jobs

    typer.echo(ilp_jobs.export_text(results, dialect.value), nl=False)


@app.command("check")
@reported
def check_command(
    rules: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="Datalog rules (.dl syntax).")],
    sketch: Annotated[Path, typer.Argument(exists=True, dir_okay=False, help="The sketch with the examples.")],
    fact_dir: FactDir = None,
    background: Background = None,
    memory_limit: Annotated[
        str,
        typer.Option(
            help="Refuse sketches and rules files estimated to need more memory than this, and stop clingo's "
            "check where it would."
        ),
    ] = COMPILE_MEMORY,
    time_limit: Annotated[
        float | None,
        typer.Option(min=0.0, callback=finite, help="Stop clingo's check after this many seconds (a located error)."),
    ] = None,
) -> None:
    """Run rules on a sketch's worlds with clingo; report examples they get wrong. Exit 0 if none."""
    from nlndl.jobs import ilp as ilp_jobs

    limit = size_option(memory_limit)
    program = ilp_jobs.compile_program(sketch, fact_dir, background=background or (), memory_limit=limit)
    warn(program.warnings)
    score = ilp_jobs.check_rules(rules, program, memory_limit=limit, time_limit=time_limit)
    typer.echo(
        f"{rules}: {score.true_positives}/{score.positives} positive examples entailed, "
        f"{score.false_positives}/{score.negatives} negative examples entailed (clingo)"
    )
    for atom in score.missed:
        typer.echo(f"  missing: {atom}")
    for atom in score.wrong:
        typer.echo(f"  wrong:   {atom}")
    unlisted = score.false_negatives - len(score.missed) + score.false_positives - len(score.wrong)
    if unlisted:
        typer.echo(f"  ... and {unlisted:,} more")
    raise typer.Exit(0 if score.solved else 1)
