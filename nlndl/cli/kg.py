"""``nlndl kg sketch``: a knowledge graph given as triples, turned into a sketch that learns one relation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nlndl.cli.common import kg_app, reported, size_option
from nlndl.defaults import COMPILE_MEMORY


@kg_app.command("sketch")
@reported
def kg_sketch_command(
    directory: Annotated[
        Path, typer.Argument(exists=True, file_okay=False, help="facts.txt, train.txt [, valid.txt, test.txt]")
    ],
    target: Annotated[str, typer.Option(help="The relation to learn.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="Write sketch.dl and the .facts files here.")],
    negatives: Annotated[int, typer.Option(min=0, help="Corrupted triples per positive, as negatives.")] = 2,
    seed: Annotated[int, typer.Option(min=0, help="Seed of the corruptions.")] = 0,
    vars_: Annotated[int, typer.Option("--vars", min=2, max=6, help="Variables of the learned clauses.")] = 3,
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
