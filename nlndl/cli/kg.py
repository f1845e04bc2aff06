"""``nlndl kg sketch``, ``kg train``, ``kg predict`` and ``kg eval``: a knowledge graph given as triples, turned into
a sketch that learns one relation, or every relation learned and written as one Datalog program; queries answered
with the learned rules, and ranking files scored by the field's protocol."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer

from nlndl.cli.common import (
    JsonOption,
    KGJobsOption,
    KGNoiseOption,
    KGPatienceOption,
    KGRelations,
    KGSubgraphOption,
    KGTimeOption,
    QuietOption,
    device_option,
    kg_app,
    reported,
    size_option,
    usage,
    warn,
)
from nlndl.defaults import (
    COMPILE_MEMORY,
    KG_JOBS,
    KG_NEGATIVES,
    KG_NOISE,
    KG_POOL_PATIENCE,
    KG_TIME_LIMIT,
    KG_VARS,
    MAX_ITERS,
    MAX_SEED,
)
from nlndl.errors import Interrupted


@kg_app.command("sketch")
@reported
def kg_sketch_command(
    directory: Annotated[
        Path, typer.Argument(exists=True, file_okay=False, help="facts.txt, train.txt [, valid.txt, test.txt]")
    ],
    target: Annotated[str, typer.Option("--relation", "--target", help="The relation to learn.")],
    output: Annotated[
        Path, typer.Option("-D", "--output-dir", "-o", "--output", help="Write sketch.dl and the .facts files here.")
    ],
    negatives: Annotated[int, typer.Option(min=0, help="Corrupted triples per positive, as negatives.")] = KG_NEGATIVES,
    seed: Annotated[int, typer.Option(min=0, max=MAX_SEED, help="Seed of the corruptions.")] = 0,
    vars_: Annotated[int, typer.Option("--vars", min=2, max=6, help="Variables of the learned clauses.")] = KG_VARS,
    memory_limit: Annotated[str, typer.Option(help="Refuse triple files larger than this to read.")] = COMPILE_MEMORY,
) -> None:
    """Write a sketch learning one relation of a knowledge graph from the others: facts.txt as background,
    the target's known triples as positives, corrupted ones as negatives (open world); then nlndl train it."""
    from nlndl.jobs import kg as kg_jobs

    made = kg_jobs.write_kg_sketch(directory, target, output, negatives, seed, vars_, size_option(memory_limit))
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
    patience: KGPatienceOption = KG_POOL_PATIENCE,
    job_count: KGJobsOption = KG_JOBS,
    noise: KGNoiseOption = KG_NOISE,
    negatives: Annotated[int, typer.Option(min=1, help="Corrupted triples per positive, as negatives.")] = KG_NEGATIVES,
    vars_: Annotated[int, typer.Option("--vars", min=2, max=6, help="Variables of the learned clauses.")] = KG_VARS,
    subgraph: KGSubgraphOption = None,
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
    """Learn rules for every relation of a knowledge graph (train.txt, or facts.txt and train.txt, as graph and
    examples; corrupted triples as negatives) and write them as one Soufflé rules.dl, one clingo rules.lp and
    AnyBURL's rules.tsv.

    Relations are learned side by side, one worker process per core (--jobs). Under torchrun (torchrun
    --nproc-per-node N -m nlndl kg train ...) they are shared among the N processes instead, and rank 0
    writes the program."""
    from nlndl.jobs import kg as kg_jobs
    from nlndl.kg_rules import KGConfig, clause_text

    config = KGConfig(
        seed, time_limit, noise, negatives, vars_, subgraph, size_option(memory_limit), max_iters, device_option(device)
    )
    config.pool_patience = patience
    config.jobs = job_count

    started: set[str] = set()
    finished: list[bool] = []  # per relation done: whether it was learned here (not kept from an interrupted run)
    clock = time.perf_counter()

    def tell(i: int, count: int, relation: str, learned: object | None) -> None:
        if quiet or json_out:
            return
        if learned is None:
            started.add(relation)
            fresh = sum(finished)
            left = count - len(finished)
            eta = f"; about {(time.perf_counter() - clock) / fresh * left / 60:.1f} min left" if fresh else ""
            typer.echo(f"[{i + 1}/{count}] {relation}: learning (at most {time_limit:g} s{eta}) ...")
            return
        finished.append(relation in started)
        verdict = "accepted" if learned.result.accepted else "best found"
        if relation not in started:
            verdict = f"{verdict} (kept from the interrupted run)"
        score, ranked = learned.result.score, len(learned.clauses)
        quality = score.quality() + (" on its training examples" if score.unchecked is None else "")
        typer.echo(
            f"[{i + 1}/{count}] {relation}: {verdict} in {learned.seconds:.0f} s, {quality}; "
            f"{ranked} clause{'' if ranked == 1 else 's'} with confidence"
        )
        for rule, conf in learned.program:  # with the graph's relation names, as kg predict and rules.tsv write it
            typer.echo(f"    {clause_text(rule, learned.relation, learned.sources)}  % confidence {conf:.3f}")
        if not learned.program:
            typer.echo("    (no rule of its program derives a known triple: rules.dl holds none for it)")

    try:
        done = kg_jobs.train_kg(directory, output, relations, config, tell, resume)
    except Interrupted as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(exc.code) from None
    warn(done.notes)
    if not done.files:  # a torchrun rank other than 0
        return
    if json_out:
        typer.echo(json.dumps(done.report, indent=2))
    else:
        if done.agree is None:
            closure = (
                f"the program's closure holds {done.derived:,} new triples (nlndl), past "
                f"{kg_jobs.KG_CHECKED_CLOSURE:,}: not also run by clingo"
            )
        else:
            check = "agree" if done.agree else "DISAGREE"
            closure = f"clingo and nlndl {check} on the program's closure ({done.derived:,} new triples)"
        typer.echo(f"wrote {', '.join(str(p) for p in done.files[:3])} and the facts; {closure}")
    if done.agree is False:
        raise typer.Exit(1)


@kg_app.command("predict")
@reported
def kg_predict_command(
    output: Annotated[Path, typer.Argument(exists=True, file_okay=False, help="What nlndl kg train -D wrote.")],
    query: Annotated[
        str | None, typer.Option("--query", help="relation(head, ?) or relation(?, tail): one query, explained.")
    ] = None,
    queries: Annotated[
        Path | None,
        typer.Option(
            "--queries",
            exists=True,
            dir_okay=False,
            help="A triples file (head<TAB>relation<TAB>tail, as test.txt): each triple asked both ways, the "
            "answers written to --ranking, MRR and Hits@k of the triples printed.",
        ),
    ] = None,
    to: Annotated[
        Path | None,
        typer.Option("--ranking", dir_okay=False, help="With --queries: the ranking file to write (AnyBURL's format)."),
    ] = None,
    k: Annotated[int, typer.Option("-k", "--top", min=1, help="How many answers.")] = 10,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs",
            min=0,
            metavar="N",
            help="With --queries: relations ranked at once, each by its own process (0: one per core; the "
            "ranking is the same).",
        ),
    ] = KG_JOBS,
    json_out: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """The best answers to a query by the learned clauses and the rules with a constant, each with the rules
    that derive it and their confidences (the explanation), ranked as bench kg ranks (top-aggregation); known
    triples are marked. With --queries FILE --ranking PATH, every triple of FILE asked both ways: the k best heads
    and tails of each written to PATH, the other known answers left out, and the triples' filtered MRR and
    Hits@k printed."""
    from nlndl.jobs import kg as kg_jobs

    if (query is None) == (queries is None):
        usage("give one of --query 'r(h, ?)' and --queries FILE")
    if queries is not None:
        if to is None:
            usage("--queries needs --ranking PATH, the ranking file to write")

        def tell(relation: str, count: int) -> None:
            if not (quiet or json_out):
                typer.echo(f"{relation}: ranking {count} triples both ways ...", err=True)

        done = kg_jobs.rank_kg(output, queries, to, k, progress=tell, jobs=jobs)
        found = done.metrics
        if json_out:
            out = {"ranking": str(done.path), "triples": done.triples, **found.to_json(), "valid_triples": done.valid}
            typer.echo(json.dumps(out, indent=2))
            return
        typer.echo(
            f"wrote {done.path}: {done.triples} triples asked both ways; MRR {found.mrr:.4f}, Hits@1 "
            f"{found.hits1:.4f}, Hits@3 {found.hits3:.4f}, Hits@10 {found.hits10:.4f} (filtered, ties at the mean rank)"
        )
        if done.valid:
            typer.echo(
                f"  {done.valid:,} of the triples are valid.txt's, which kg train never draws as negatives, so the "
                "learned clauses may have learned where they are; bench kg --split valid ranks valid.txt with them "
                "drawn as any unknown triple"
            )
        return
    if to is not None:
        usage("--ranking goes with --queries")
    try:
        answers = kg_jobs.predict_kg(output, query, k)
    except ValueError as exc:
        usage(str(exc))
    if json_out:
        typer.echo(json.dumps({"query": query, "answers": [a.to_json() for a in answers]}, indent=2))
        return
    if not answers:
        typer.echo(f"{query}: no rule derives an answer")
        return
    for rank, answer in enumerate(answers, start=1):
        known = "  (known)" if answer.known else ""
        typer.echo(f"{rank:>3}. {answer.entity}  {answer.score:.4f}{known}")
        for text, conf, weight in answer.rules[:3]:
            weighed = "" if weight == 1 else f" x {weight:g}"  # a dangling rule: counts at weight x confidence
            typer.echo(f"       {conf:.3f}{weighed}  {text}")
        if len(answer.rules) > 3:
            more = len(answer.rules) - 3
            typer.echo(f"       ... and {more} more rule{'' if more == 1 else 's'}")


@kg_app.command("eval")
@reported
def kg_eval_command(
    directory: Annotated[
        Path, typer.Argument(exists=True, file_okay=False, help="The graph: [facts.txt,] train, valid, test")
    ],
    ranking: Annotated[
        Path,
        typer.Option(
            "--ranking",
            exists=True,
            dir_okay=False,
            help="A ranking file in AnyBURL's format (kg predict --queries writes one; AnyBURL, SAFRAN, PyClause too).",
        ),
    ],
    json_out: JsonOption = False,
) -> None:
    """Score a ranking file by bench kg's protocol: each triple's head and tail ranked in the file's order, the
    other answers known in any split filtered out, an answer not listed at the mean rank of the candidates the
    list leaves out; MRR and Hits@k over both directions, with --json per direction and per relation too.
    Rankings made by other rule learners are scored exactly as nlndl's own."""
    from nlndl.jobs import kg as kg_jobs

    done = kg_jobs.score_ranking(directory, ranking)
    found = done.metrics
    if json_out:
        out = {
            "ranking": str(done.path),
            "triples": done.triples,
            **found.to_json(),
            "covers": {name: {"ranked": a, "of": b} for name, (a, b) in done.covers.items()},
            **{name: m.to_json() for name, m in done.directions.items()},
            "relations": {r: m.to_json() for r, m in done.relations.items()},
        }
        typer.echo(json.dumps(out, indent=2))
        return
    held = "; ".join(f"{a:,} of {name}.txt's {b:,}" for name, (a, b) in done.covers.items())
    plural = "s" if done.triples != 1 else ""
    typer.echo(
        f"{done.path}: {done.triples:,} triple{plural} asked both ways ({held}); MRR {found.mrr:.4f}, Hits@1 "
        f"{found.hits1:.4f}, Hits@3 {found.hits3:.4f}, Hits@10 {found.hits10:.4f} (filtered; the file's order, an "
        "answer not listed at the mean rank of the rest)"
    )
