"""``nlndl kg sketch`` and ``nlndl kg train``: a knowledge graph given as triples, turned into a sketch that learns
one relation, or every relation learned and written as one Datalog program."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from nlndl.cli.common import (
    JsonOption,
    KGNoiseOption,
    KGRelations,
    KGTimeOption,
    QuietOption,
    SubgraphOption,
    device_option,
    kg_app,
    reported,
    size_option,
    warn,
)
from nlndl.defaults import COMPILE_MEMORY, KG_NEGATIVES, KG_NOISE, KG_TIME_LIMIT, KG_VARS, MAX_ITERS, MAX_SEED
from nlndl.errors import Interrupted


@kg_app.command("sketch")
@reported
def kg_sketch_command(
    directory: Annotated[
        Path, typer.Argument(exists=True, file_okay=False, help="facts.txt, train.txt [, valid.txt, test.txt]")
    ],
    target: Annotated[str, typer.Option(help="The relation to learn.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Write sketch.dl and the .facts files here.")],
    negatives: Annotated[int, typer.Option(min=0, help="Corrupted triples per positive, as negatives.")] = KG_NEGATIVES,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the corruptions.")] = 0,
    vars_: Annotated[int, typer.Option("--vars", min=2, max=6, help="Variables of the learned clauses.")] = KG_VARS,
    memory_limit: Annotated[str, typer.Option(help="Refuse triple files larger than this to read.")] = COMPILE_MEMORY,
) -> None:
    """Write a sketch learning one relation of a knowledge graph from the others: facts.txt as background,
    the target's known triples as positives, corrupted ones as negatives (open world); then nlndl train it."""
    from nlndl import jobs

    made = jobs.write_kg_sketch(directory, target, output, negatives, seed, vars_, size_option(memory_limit))
    typer.echo(
        f"{output / 'sketch.dl'}: {made.relations[target]} from {len(made.facts)} relations, "
        f"{made.positives:,} positive and {made.negatives:,} corrupted negative examples; "
        f"learn it with: nlndl train {output / 'sketch.dl'}"
    )


@kg_app.command("train")
@reported
def kg_train_command(
    directory: Annotated[
        Path, typer.Argument(exists=True, file_okay=False, help="facts.txt, train.txt [, valid.txt, test.txt]")
    ],
    output: Annotated[Path, typer.Option("-D", "--output-dir", help="Write rules.dl, rules.lp and facts here.")],
    relations: KGRelations = None,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the negatives and of training.")] = 0,
    time_limit: KGTimeOption = KG_TIME_LIMIT,
    noise: KGNoiseOption = KG_NOISE,
    negatives: Annotated[int, typer.Option(min=1, help="Corrupted triples per positive, as negatives.")] = KG_NEGATIVES,
    vars_: Annotated[int, typer.Option("--vars", min=2, max=6, help="Variables of the learned clauses.")] = KG_VARS,
    subgraph: SubgraphOption = None,
    memory_limit: Annotated[
        str, typer.Option(help="Refuse triple files or sketches larger than this.")
    ] = COMPILE_MEMORY,
    max_iters: Annotated[int, typer.Option(min=1, help="Iteration limit per relation.")] = MAX_ITERS,
    device: Annotated[str, typer.Option(help="cpu, cuda or cuda:N.")] = "cpu",
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue an interrupted run from the relations it kept in OUT.")
    ] = False,
    json_out: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Learn rules for every relation of a knowledge graph (facts.txt as the graph, train.txt as examples,
    corrupted triples as negatives) and write them as one Soufflé rules.dl and one clingo rules.lp.

    Under torchrun (torchrun --nproc-per-node N -m nlndl kg train ...) the relations are shared among the N
    processes and rank 0 writes the program."""
    from nlndl import jobs
    from nlndl.datalog import render
    from nlndl.kg import KGConfig

    config = KGConfig(
        seed, time_limit, noise, negatives, vars_, subgraph, size_option(memory_limit), max_iters, device_option(device)
    )

    started: set[str] = set()

    def tell(i: int, count: int, relation: str, learned: object | None) -> None:
        if quiet or json_out:
            return
        if learned is None:
            started.add(relation)
            typer.echo(f"[{i + 1}/{count}] {relation}: learning (up to {time_limit:g} s) ...")
            return
        verdict = "accepted" if learned.result.accepted else "best found"
        if relation not in started:
            verdict = f"{verdict} (kept from the interrupted run)"
        score = learned.result.score
        typer.echo(
            f"[{i + 1}/{count}] {relation}: {verdict} in {learned.seconds:.0f} s, precision "
            f"{score.precision:.3f} recall {score.recall:.3f} on its training examples; "
            f"{len(learned.clauses)} clauses with confidence"
        )
        for rule, conf in learned.program:
            typer.echo(f"    {render(rule)}  % confidence {conf:.3f}")

    try:
        done = jobs.train_kg(directory, output, relations, config, tell, resume)
    except Interrupted as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(exc.code) from None
    warn(done.notes)
    if not done.files:  # a torchrun rank other than 0
        return
    if json_out:
        typer.echo(json.dumps(done.report, indent=2))
    else:
        check = "agree" if done.agree else "DISAGREE"
        typer.echo(
            f"wrote {', '.join(str(p) for p in done.files[:3])} and the facts; clingo and nlndl's crisp evaluator "
            f"{check} on the program's closure ({done.derived:,} new triples)"
        )
    if not done.agree:
        raise typer.Exit(1)
