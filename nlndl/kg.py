"""Rules for the relations of a knowledge graph: one sketch per relation (:mod:`nlndl.compiler.triples`),
learned under ``noise``, and every clause the network read out during training kept with its confidence.

A clause's confidence is its support (known triples of the relation it derives) over the pairs it derives,
both on facts.txt + train.txt, the path-rule miners' definition. The learned program is the crisp answer;
the clauses with their confidences rank candidates (noisy-or, :mod:`nlndl.ranking`), since a program of
three clauses ties every candidate it derives.
"""

from __future__ import annotations

import resource
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from nlndl.compiler import compile_sketch
from nlndl.compiler.crisp import BodyAtom, Rule, evaluate
from nlndl.compiler.diagnostics import CompileError, Diagnostics
from nlndl.compiler.triples import FACT, KGSketch, Triple, kg_sketch, read_splits
from nlndl.datalog import render
from nlndl.defaults import (
    COMPILE_MEMORY_BYTES,
    KG_NEGATIVES,
    KG_NOISE,
    KG_PATIENCE,
    KG_TIME_LIMIT,
    KG_VARS,
    MAX_ITERS,
    TRAIN_MEMORY_BYTES,
)
from nlndl.distributed import gather, process_rank, share
from nlndl.errors import JobError
from nlndl.learn import LearnConfig, LearnResult, learn
from nlndl.ranking import noisy_or
from nlndl.runtime.budget import BudgetError
from nlndl.runtime.train import TrainConfig
from nlndl.verify import Score

KNOWN = ("facts", "train")  # the splits rules read and confidences count on
MIN_SUPPORT = 1  # known triples a clause must derive to rank anything


@dataclass
class Graph:
    """A knowledge graph's entities (index by name), and per split its triples as index pairs by relation."""

    entities: list[str]
    index: dict[str, int]
    triples: dict[str, list[Triple]]  # per split, as read
    splits: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path, memory_limit: int | None = None) -> Graph:
        """Read facts, train, valid and test (those present); JobError with the located errors."""
        diags = Diagnostics()
        raw = read_splits(directory, diags, memory_limit)
        if diags:
            raise JobError(diags.render())
        names = sorted({e for rows in raw.values() for h, _, t in rows for e in (h, t)})
        index = {e: i for i, e in enumerate(names)}
        graph = cls(names, index, raw)
        for split, rows in raw.items():
            by: dict[str, list[tuple[int, int]]] = {}
            for h, r, t in rows:
                by.setdefault(r, []).append((index[h], index[t]))
            graph.splits[split] = by
        return graph

    @property
    def relations(self) -> list[str]:
        return sorted({r for by in self.splits.values() for r in by})

    def pairs(self, relation: str, splits: tuple[str, ...]) -> set[tuple[int, int]]:
        return {p for s in splits for p in self.splits.get(s, {}).get(relation, [])}

    def matrix(self, pairs: set[tuple[int, int]]) -> sparse.csr_matrix:
        n = len(self.entities)
        if not pairs:
            return sparse.csr_matrix((n, n), dtype=np.int8)
        h, t = np.array(sorted(pairs)).T
        return sparse.csr_matrix((np.ones(h.size, dtype=np.int8), (h, t)), shape=(n, n))


def confidence(body: sparse.csr_matrix, known: sparse.csr_matrix) -> tuple[float, int]:
    """(support / body count, support) of a rule whose body derives the nonzero pairs of ``body``."""
    derived = body.count_nonzero()
    support = body.multiply(known).count_nonzero()
    return (support / derived if derived else 0.0), support


def rule_pairs(graph: Graph, rules: list[Rule], sources: dict[str, str]) -> list[sparse.csr_matrix]:
    """Each rule's derived (head, tail) pairs on facts + train, by the crisp evaluator over entity indices;
    ``sources`` maps the sketch's relation identifiers to the graph's relations they hold."""
    db = {ident: graph.pairs(relation, KNOWN) for ident, relation in sources.items()}
    out = []
    for rule in rules:
        alone = Rule("derived__", rule.head_args, rule.body)
        model = evaluate({a.predicate: set(db[a.predicate]) for a in rule.body}, [alone])
        out.append(graph.matrix(set(model.get("derived__", set()))))
    return out


@dataclass
class KGConfig:
    """How each relation is learned: its sketch (``negatives`` corruptions per positive, clauses of ``vars``
    variables) and its training."""

    seed: int = 0
    time_limit: float = KG_TIME_LIMIT
    noise: float | None = KG_NOISE
    negatives: int = KG_NEGATIVES
    vars: int = KG_VARS
    subgraph: int | None = None
    memory_limit: int = COMPILE_MEMORY_BYTES  # reading the triples and compiling each sketch
    max_iters: int = MAX_ITERS
    device: str = "cpu"
    train_memory: int = TRAIN_MEMORY_BYTES  # each relation's training fitted to it (recomputed steps, fewer restarts)
    noise_patience: int = KG_PATIENCE  # iterations an accepted best may go unimproved before training stops


@dataclass
class RelationRules:
    """What was learned for one relation: the program, and every clause read out, with confidences."""

    relation: str
    head: str  # the sketch's identifier of the relation
    sources: dict[str, str]  # sketch identifier -> graph relation
    result: LearnResult
    program: list[tuple[Rule, float]]  # the learned program's rules with their confidences
    clauses: list[tuple[Rule, float]]  # every clause read out that derives a known triple, by confidence
    pairs: dict[Rule, sparse.csr_matrix] = field(repr=False, default_factory=dict)  # each rule's derived pairs
    seconds: float = 0.0
    peak_rss: int = 0  # bytes: the learning process's peak resident memory once this relation was learned

    def scores(self, shape: tuple[int, int], clauses: bool = True) -> sparse.csr_matrix:
        """Per (head, tail), the noisy-or of the confidences of the clauses (or the program's rules) deriving it."""
        chosen = self.clauses if clauses else self.program
        return noisy_or([(self.pairs[r], c) for r, c in chosen], shape)

    def to_json(self) -> dict[str, Any]:
        return {
            "relation": self.relation,
            "rules": [render(r) for r, _ in self.program],
            "confidences": [round(c, 4) for _, c in self.program],
            "clauses": [{"rule": render(r), "confidence": round(c, 4)} for r, c in self.clauses],
            "accepted": self.result.accepted,
            "noise": self.result.noise,
            "training": self.result.score.to_json(),
            "iterations": self.result.iterations,
            "seconds": round(self.seconds, 2),
            "peak_rss_mib": round(self.peak_rss / 2**20),
        }


def rule_json(rule: Rule) -> dict[str, Any]:
    """A clause as JSON (a checkpoint keeps clauses whole, not as text to parse again)."""
    return {
        "head": rule.head,
        "args": [list(a) for a in rule.head_args],
        "body": [
            {"predicate": a.predicate, "args": [list(x) for x in a.args], "negated": a.negated} for a in rule.body
        ],
    }


def rule_from_json(data: dict[str, Any]) -> Rule:
    body = tuple(
        BodyAtom(a["predicate"], tuple((str(k), v) for k, v in a["args"]), bool(a["negated"])) for a in data["body"]
    )
    return Rule(data["head"], tuple((str(k), v) for k, v in data["args"]), body)


def checkpoint_json(one: RelationRules) -> dict[str, Any]:
    """Everything :func:`from_checkpoint` needs to rebuild ``one`` without learning it again."""
    result = one.result
    return {
        "relation": one.relation,
        "head": one.head,
        "sources": one.sources,
        "result": {
            "solved": result.solved,
            "score": asdict(result.score),
            "iterations": result.iterations,
            "seconds": result.seconds,
            "restarts": result.restarts,
            "restart": result.restart,
            "accepted": result.accepted,
            "noise": result.noise,
        },
        "program": [[rule_json(r), c] for r, c in one.program],
        "clauses": [[rule_json(r), c] for r, c in one.clauses],
        "seconds": one.seconds,
        "peak_rss": one.peak_rss,
    }


def from_checkpoint(data: dict[str, Any], graph: Graph) -> RelationRules:
    """A relation's rules as :func:`checkpoint_json` kept them, each clause's pairs derived again on ``graph``
    (KeyError, TypeError or ValueError on a damaged record)."""
    kept = data["result"]
    program = [(rule_from_json(r), float(c)) for r, c in data["program"]]
    clauses = [(rule_from_json(r), float(c)) for r, c in data["clauses"]]
    result = LearnResult(
        solved=bool(kept["solved"]),
        rules=[r for r, _ in program],
        score=Score(**kept["score"]),
        iterations=int(kept["iterations"]),
        seconds=float(kept["seconds"]),
        restarts=int(kept["restarts"]),
        restart=kept["restart"],
        accepted=bool(kept["accepted"]),
        noise=kept["noise"],
        clauses=[r for r, _ in clauses],
    )
    sources = {str(k): str(v) for k, v in data["sources"].items()}
    rules = list(dict.fromkeys([r for r, _ in program] + [r for r, _ in clauses]))
    pairs = dict(zip(rules, rule_pairs(graph, rules, sources), strict=True))
    return RelationRules(
        str(data["relation"]), str(data["head"]), sources, result, program, clauses, pairs,
        float(data["seconds"]), int(data["peak_rss"]),
    )  # fmt: skip


def learn_relation(directory: Path, graph: Graph, target: str, config: KGConfig) -> RelationRules:
    """Learn ``target`` from its ``kg sketch`` (compiled in a temporary directory) and score what was found."""
    diags = Diagnostics()
    made: KGSketch | None = kg_sketch(
        directory, target, diags, config.negatives, config.seed, config.vars, config.memory_limit, graph.triples
    )
    if made is None:
        raise JobError(diags.render())
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nlndl-kg-") as tmp:
        (Path(tmp) / "sketch.dl").write_text(made.text)
        for name, text in made.facts.items():
            (Path(tmp) / f"{name}.facts").write_text(text)
        try:
            program = compile_sketch(
                Path(tmp) / "sketch.dl", seed=config.seed, subgraph=config.subgraph, memory_limit=config.memory_limit
            )
        except CompileError as exc:  # located in a temporary file: said of the relation instead
            found = " ".join(d.message for d in exc.diagnostics.errors)
            raise JobError(f"{directory}: error: relation {target!r} (as nlndl kg sketch writes it): {found}") from None
    learned = LearnConfig(
        train=TrainConfig(seed=config.seed, max_iters=config.max_iters, time_limit=config.time_limit),
        device=config.device,
        memory_limit=config.train_memory,
        noise=config.noise,
        noise_patience=config.noise_patience,
        clauses=True,
    )
    try:
        result = learn(program, learned)
    except BudgetError as exc:
        raise JobError(f"{directory}: error: relation {target!r}: {exc}") from None
    seconds = time.perf_counter() - start
    sources = {ident: (target if name == FACT else name) for name, ident in made.relations.items()}
    rules = list(dict.fromkeys([*result.rules, *result.clauses]))
    pairs = dict(zip(rules, rule_pairs(graph, rules, sources), strict=True))
    known = graph.matrix(graph.pairs(target, KNOWN))
    rated = {r: confidence(p, known) for r, p in pairs.items()}
    program_rules = [(r, rated[r][0]) for r in result.rules]
    clauses = sorted(((r, c) for r, (c, support) in rated.items() if support >= MIN_SUPPORT), key=lambda rc: -rc[1])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return RelationRules(target, made.relations[target], sources, result, program_rules, clauses, pairs, seconds, rss)


def learn_graph(
    directory: Path,
    graph: Graph,
    relations: list[str],
    config: KGConfig,
    progress: Callable[[int, int, str, RelationRules | None], None] | None = None,
    kept: dict[str, RelationRules] | None = None,
    keep: Callable[[RelationRules], None] | None = None,
) -> list[RelationRules] | None:
    """The given relations of ``graph`` (read from ``directory``), learned one after another or, under torchrun,
    shared round robin among the processes and gathered on rank 0 in the given order (None on the other ranks);
    ``progress`` is told (index, count, relation, None) before and (..., learned) after each. A relation in
    ``kept`` (learned by an earlier, interrupted run) is taken from there; ``keep`` is given each one learned."""
    at = process_rank(config.device)
    kept = kept or {}
    out = []
    for target in share(relations, at):
        i = relations.index(target)
        if target in kept:
            out.append(kept[target])
        else:
            if progress:
                progress(i, len(relations), target, None)
            out.append(learn_relation(directory, graph, target, config))
            if keep:
                keep(out[-1])
        if progress:
            progress(i, len(relations), target, out[-1])
    return gather(out, at)


def checked_relations(graph: Graph, relations: list[str] | None, directory: Path) -> list[str]:
    """The relations asked for, in order, or every relation with triples in train.txt; JobError naming one that
    the graph lacks or that has nothing to learn from, before any work."""
    if not relations:
        chosen = [r for r in graph.relations if graph.splits["train"].get(r)]
        if not chosen:
            raise JobError(f"{directory / 'train.txt'}: error: no triples to learn from")
        return chosen
    chosen = list(dict.fromkeys(relations))
    for r in chosen:
        if r not in graph.relations:
            raise JobError(f"{directory}: error: no relation {r!r} in the graph (it has {', '.join(graph.relations)})")
        if not graph.splits["train"].get(r):
            raise JobError(f"{directory / 'train.txt'}: error: no triple of {r!r} to learn it from")
    return chosen
