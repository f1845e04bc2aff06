"""Rules for the relations of a knowledge graph: one sketch per relation (:mod:`nlndl.compiler.triples`),
learned under ``noise``, and every clause the network read out during training kept with its confidence.

A clause's confidence is its support (known triples of the relation it derives) over the pairs it derives,
on the graph the rules read (train.txt, or Neural LP's facts.txt + train.txt), the path-rule miners'
definition. The learned program is the crisp answer; the clauses with their confidences rank candidates
(top-aggregation, :mod:`nlndl.ranking`), since a program of three clauses ties every candidate it derives.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from nlndl import cardinality, paths
from nlndl.body_join import binary_head, body_pairs
from nlndl.compiler import SketchText, compile_sketch
from nlndl.compiler.crisp import BodyAtom, Rule, evaluate
from nlndl.compiler.diagnostics import CompileError, Diagnostics
from nlndl.compiler.symbols import quoted
from nlndl.compiler.triples import FACT, SPLITS, KGSketch, Triple, kg_sketch, read_splits
from nlndl.constants import Bodies
from nlndl.datalog import render
from nlndl.defaults import (
    COMPILE_MEMORY_BYTES,
    KG_BODY,
    KG_ENTRIES,
    KG_JOBS,
    KG_NEGATIVES,
    KG_NOISE,
    KG_PATH_LENGTH,
    KG_PATIENCE,
    KG_POOL_PATIENCE,
    KG_TIME_LIMIT,
    KG_VARS,
    MAX_ITERS,
    TRAIN_MEMORY_BYTES,
)
from nlndl.distributed import gather, process_rank, share
from nlndl.errors import JobError
from nlndl.learn import LearnConfig, LearnResult, fit, learn
from nlndl.pairs import member, nonzero_keys
from nlndl.paths import boolean
from nlndl.ranking import Aggregate, Classed, Ranker, by_class, combined, popularity
from nlndl.runtime.budget import BudgetError
from nlndl.runtime.train import TrainConfig
from nlndl.verify import Score
from nlndl.workers import each_relation, worker_count

KNOWN = ("facts", "train")  # the splits rules read and confidences count on
EXPLAINED = 5  # counted rules (paths, and rules with a constant) listed per predicted answer, best first
MIN_SUPPORT = 1  # known triples a clause must derive to rank anything


@dataclass
class Graph:
    """A knowledge graph's entities (index by name), and per split its triples as index pairs by relation."""

    entities: list[str]
    index: dict[str, int]
    triples: dict[str, list[Triple]]  # per split, as read
    splits: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)
    matrices: dict[str, sparse.csr_matrix] = field(default_factory=dict, repr=False)  # see relation_matrix
    one_atom_bodies: Bodies | None = field(default=None, repr=False)  # see bodies

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

    def relation_matrix(self, relation: str) -> sparse.csr_matrix:
        """The known (facts + train) pairs of ``relation`` as a 0/1 matrix, built once."""
        cached = self.matrices.get(relation)
        if cached is None:
            cached = self.matrices[relation] = self.matrix(self.pairs(relation, KNOWN))
        return cached

    def known_matrices(self) -> dict[str, sparse.csr_matrix]:
        """Every relation's :meth:`relation_matrix`, by name."""
        return {r: self.relation_matrix(r) for r in self.relations}

    def bodies(self) -> Bodies:
        """Per entity, the one-atom bodies that hold for it (the rules with a constant read them), built once."""
        if self.one_atom_bodies is None:
            self.one_atom_bodies = Bodies.of(self.known_matrices())
        return self.one_atom_bodies

    def matrix(self, pairs: set[tuple[int, int]]) -> sparse.csr_matrix:
        return pair_matrix(pairs, len(self.entities))


def pair_matrix(pairs: set[tuple[int, int]], n: int) -> sparse.csr_matrix:
    """``pairs`` of entity indices below ``n`` as an n x n 0/1 matrix."""
    if not pairs:
        return sparse.csr_matrix((n, n), dtype=np.float32)
    h, t = np.array(sorted(pairs)).T
    return sparse.csr_matrix((np.ones(h.size, dtype=np.float32), (h, t)), shape=(n, n))


def read_graph(directory: Path, memory_limit: int | None = None) -> Graph:
    """:meth:`Graph.read`, as a module-level function that a worker process can be handed."""
    return Graph.read(directory, memory_limit)


def confidence(body: sparse.csr_matrix, known: sparse.csr_matrix) -> tuple[float, int]:
    """(support / body count, support) of a rule whose body derives the nonzero pairs of ``body``."""
    derived = body.count_nonzero()
    support = body.multiply(known).count_nonzero()
    return (support / derived if derived else 0.0), support


def chain(rule: Rule) -> list[tuple[str, bool]] | None:
    """A clause whose body is a path from the head's first variable to its second, ``r(A, B) :- p(A, C),
    q(C, B)`` with atoms read either way: its atoms in path order, each with whether it is read backwards
    (``p(C, A)``); None for any other shape (constants, negation, a variable off the path, a repeated one)."""
    head = binary_head(rule)
    if head is None:
        return None
    start, end = head
    atoms = list(rule.body)
    path, at, seen = [], start, {start}
    while atoms:
        step = next((a for a in atoms if at in (a.args[0][1], a.args[1][1])), None)
        if step is None:
            return None
        atoms.remove(step)
        forward = step.args[0][1] == at
        other = step.args[1][1] if forward else step.args[0][1]
        if other == at or (other in seen and other != end) or (other == end and atoms):
            return None
        path.append((step.predicate, not forward))
        seen.add(other)
        at = other
    return path if at == end else None


def path_of(rule: Rule, sources: dict[str, str]) -> tuple[tuple[str, bool], ...] | None:
    """The path atoms (:func:`chain`) of ``rule``, named as the graph names them; None where it is no path.
    A clause whose path is a counted path rule's (``paths.PathRule.atoms``) says what that rule says."""
    path = chain(rule)
    return None if path is None else tuple((sources.get(p, p), back) for p, back in path)


def chains_of(rules: list[Rule], sources: dict[str, str]) -> set[tuple[tuple[str, bool], ...]]:
    """The path atoms (:func:`path_of`) of those of ``rules`` that are paths."""
    return {path for rule in rules if (path := path_of(rule, sources)) is not None}


def restates(rule: Rule, target: str, sources: dict[str, str]) -> bool:
    """Whether ``rule`` derives only known triples of ``target``: its body holds the head itself, read from the
    target's known triples (``r(A, B) :- r_fact(A, B), ...``), so it ranks nothing and is left out of the
    clauses."""
    return any(
        not atom.negated and sources.get(atom.predicate) == target and atom.args == rule.head_args for atom in rule.body
    )


def chain_product(path: list[tuple[str, bool]], relation: Callable[[int, str], sparse.csr_matrix]) -> sparse.csr_matrix:
    """The pairs a chain-shaped clause's body derives (its :func:`chain`): the product of its atoms' 0/1
    matrices, ``relation(j, predicate)`` that of the ``j``-th atom, transposed where it is read backwards."""
    product = None
    for j, (predicate, backwards) in enumerate(path):
        step = relation(j, predicate)
        step = step.T.tocsr() if backwards else step
        product = step if product is None else boolean(product @ step)
    return boolean(product)


def rule_pairs(graph: Graph, rules: list[Rule], sources: dict[str, str]) -> list[sparse.csr_matrix]:
    """Each rule's derived (head, tail) pairs on facts + train: a chain-shaped clause (:func:`chain`) as the
    product of its relations' matrices, a clause over three variables by :func:`nlndl.body_join.body_pairs`,
    any other by the crisp evaluator over entity indices; ``sources`` maps the sketch's relation identifiers
    to the graph's relations they hold."""
    db: dict[str, set[tuple[int, int]]] = {}
    out = []

    def relation(predicate: str) -> sparse.csr_matrix:
        return graph.relation_matrix(sources[predicate])

    for rule in rules:
        path = chain(rule)
        if path is not None:
            out.append(chain_product(path, lambda _, predicate: relation(predicate)))
            continue
        joined = body_pairs(rule, relation, len(graph.entities))
        if joined is not None:
            out.append(joined)
            continue
        for a in rule.body:
            if a.predicate not in db:
                db[a.predicate] = graph.pairs(sources[a.predicate], KNOWN)
        alone = Rule("derived__", rule.head_args, rule.body)
        model = evaluate({a.predicate: set(db[a.predicate]) for a in rule.body}, [alone])
        out.append(graph.matrix(set(model.get("derived__", set()))))
    return out


def closure(db: dict[str, set[tuple[int, int]]], rules: list[Rule], n: int) -> dict[str, set[tuple[int, int]]]:
    """The least model of ``rules`` over ``db`` (relation identifier -> pairs of entity indices below ``n``), as
    :func:`nlndl.compiler.crisp.evaluate` computes it, but with each chain-shaped rule (:func:`chain`) a product
    of sparse matrices, round by round on the pairs the last round added (semi-naive: one recursive atom reads
    them, the others the relations so far); any other rule is joined on the relations so far, in every round after
    one of its body's relations grew, by :func:`nlndl.body_join.body_pairs` or, outside its shapes, the crisp
    evaluator. A program with negation goes to the crisp evaluator whole."""
    if any(a.negated for rule in rules for a in rule.body):
        return evaluate(db, rules)

    def pairs_of(m: sparse.csr_matrix) -> set[tuple[int, int]]:
        h, t = m.nonzero()
        return set(zip(h.tolist(), t.tolist(), strict=True))

    heads = {rule.head for rule in rules}
    empty = pair_matrix(set(), n)
    held = {name: pair_matrix(pairs, n) for name, pairs in db.items()}
    for head in heads:
        held.setdefault(head, empty)
    shaped = [(rule, chain(rule)) for rule in rules]
    delta: dict[str, sparse.csr_matrix] | None = None  # the first round reads every relation whole
    while True:
        new = {head: empty for head in heads}
        as_pairs: dict[str, set[tuple[int, int]]] = {}  # this round's relations, for the crisp evaluator's rules
        for rule, path in shaped:
            if path is None:
                if delta is not None and not any(a.predicate in delta and delta[a.predicate].nnz for a in rule.body):
                    continue  # none of its body's relations grew last round: it derives what it derived before
                joined = body_pairs(rule, lambda p: held.get(p, empty), n)
                if joined is not None:
                    new[rule.head] = new[rule.head] + joined
                    continue
                alone = Rule("derived__", rule.head_args, rule.body)
                for a in rule.body:
                    if a.predicate not in as_pairs:
                        as_pairs[a.predicate] = pairs_of(held.get(a.predicate, empty))
                sources = {a.predicate: as_pairs[a.predicate] for a in rule.body}
                derived = evaluate(sources, [alone]).get("derived__", set())
                new[rule.head] = new[rule.head] + pair_matrix(set(derived), n)
                continue
            at = [None] if delta is None else [i for i, (p, _) in enumerate(path) if p in heads]
            for i in at:
                new[rule.head] = new[rule.head] + chain_product(  # atom i reads the last round's pairs
                    path,
                    lambda j, predicate, i=i, last=delta: last[predicate] if j == i else held.get(predicate, empty),
                )
        delta = {}
        for head in heads:
            found = boolean(new[head])
            fresh = (found - found.multiply(held[head])).tocsr()
            fresh.eliminate_zeros()
            delta[head] = fresh
            held[head] = boolean(held[head] + fresh)
        if not any(d.nnz for d in delta.values()):
            return {name: pairs_of(m) for name, m in held.items()}


class PoolJudge:
    """Whether a clause read out improves a relation's clause pool: it raises the best confidence with which
    some known triple of the relation is derived, so that max-aggregation would rank that triple higher. Each
    clause's pairs and confidence are computed once (:meth:`rate`) and kept for the ranking."""

    def __init__(self, graph: Graph, target: str, sources: dict[str, str], floor: np.ndarray | None = None) -> None:
        self.graph, self.target, self.sources = graph, target, sources
        self.known = graph.relation_matrix(target)
        self.known_keys = known_keys(self.known)
        self.best = np.zeros(self.known.nnz, dtype=np.float64)  # per known pair, in the matrix's order
        if floor is not None:  # what the counted rules already give each pair (counted_floor)
            self.best = np.maximum(self.best, floor)
        self.pairs: dict[Rule, sparse.csr_matrix] = {}
        self.rated: dict[Rule, tuple[float, int]] = {}  # (confidence, support)

    def rate(self, rule: Rule) -> tuple[float, int]:
        """The (confidence, support) of ``rule`` on the known triples, its pairs kept in :attr:`pairs`."""
        if rule not in self.rated:
            (self.pairs[rule],) = rule_pairs(self.graph, [rule], self.sources)
            self.rated[rule] = confidence(self.pairs[rule], self.known)
        return self.rated[rule]

    def __call__(self, rule: Rule) -> bool:
        if restates(rule, self.target, self.sources):
            return False
        conf, support = self.rate(rule)
        if support < MIN_SUPPORT:
            return False
        better = _hits(self.known_keys, self.pairs[rule]) & (conf > self.best)
        self.best[better] = conf
        return bool(better.any())


def counted_floor(
    graph: Graph, target: str, length: int, seed: int, listed: list[paths.PathRule] | None = None
) -> np.ndarray:
    """Per known pair of ``target`` (in its matrix's order), the best confidence of a counted path rule
    (nlndl.paths) deriving it. The ranking takes the best of these and the clauses, so a clause read out
    improves the pool only where it beats them: training stops once the network finds nothing they lack.
    ``listed``, if given, receives each counted rule without its pairs (for the rule list, not counted again)."""
    known = graph.relation_matrix(target)
    keys = known_keys(known)
    best = np.zeros(known.nnz, dtype=np.float64)
    for rule in paths.each(graph.known_matrices(), target, length, seed):
        raise_floor(best, keys, rule)
        if listed is not None:
            listed.append(rule.listed())
    return best


def known_keys(known: sparse.csr_matrix) -> np.ndarray:
    """The keys (row * width + column) of ``known``'s nonzeros in its CSR order: the pairs the floor keeps a
    confidence for (:func:`counted_floor`), found once per relation rather than once per rule."""
    rows, cols = known.nonzero()
    return rows.astype(np.int64) * known.shape[1] + cols


def raise_floor(best: np.ndarray, known: np.ndarray, rule: paths.PathRule) -> None:
    """Raise ``best`` (per key of ``known``, :func:`known_keys`, as :func:`counted_floor` gives it) to
    ``rule``'s confidence where ``rule`` derives that pair."""
    np.maximum(best, np.where(member(known, rule.keys), rule.confidence, 0.0), out=best)


def _hits(known: np.ndarray, pairs: sparse.csr_matrix) -> np.ndarray:
    """Per key of ``known`` (:func:`known_keys`), whether ``pairs`` (0/1: a rule's) holds that pair too."""
    return member(known, nonzero_keys(pairs))


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
    pool_patience: int | None = KG_POOL_PATIENCE  # iterations without a new clause before training stops
    jobs: int = KG_JOBS  # relations learned at once, each by a worker process (0: one per core)
    body: int | None = KG_BODY  # relations a clause body reads at most (compiler.triples.body_relations)
    entries: int | None = KG_ENTRIES  # index entries past which a relation is learned under prune=path
    path_length: int = KG_PATH_LENGTH  # the longest counted path rule ranked beside the clauses (nlndl.paths)
    fit_weights: bool = False  # also rank by the counted rules with weights fitted on held-out triples (bench kg)


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
    # the counted path rules (nlndl.paths, without their pairs) where learning counted them for its floor
    counted: list[paths.PathRule] | None = field(repr=False, default=None)

    def rules(self, shape: tuple[int, int], clauses: bool = True, asked: np.ndarray | None = None) -> Aggregate:
        """The clauses (or the program's rules) with their confidences, to rank with (:mod:`nlndl.ranking`);
        with ``asked`` (the (head, tail) pairs to rank) only their heads' rows and tails' columns are kept."""
        chosen = self.clauses if clauses else self.program
        out = Aggregate(shape) if asked is None else Aggregate(shape, asked[:, 0], asked[:, 1])
        for rule, confidence in chosen:
            out.add(self.pairs[rule], confidence)
        return out

    def chains(self) -> set[tuple[tuple[str, bool], ...]]:
        """The clauses that are path rules, as :class:`nlndl.paths.PathRule` atoms over the graph's relations:
        a counted path rule among them is not counted twice."""
        return chains_of([r for r, _ in self.clauses], self.sources)

    def counts(self, rule: Rule, confidence: float) -> dict[str, int]:
        """The pairs ``rule`` (of that ``confidence``) derives on the known triples (predicted) and the known ones
        among them (correct)."""
        predicted = int(self.pairs[rule].nnz) if rule in self.pairs else 0
        return {"predicted": predicted, "correct": round(confidence * predicted)}

    def to_json(self) -> dict[str, Any]:
        return {
            "relation": self.relation,
            "rules": [render(r) for r, _ in self.program],
            "confidences": [round(c, 4) for _, c in self.program],
            "clauses": [
                {"rule": render(r), "confidence": round(c, 4), **self.counts(r, c), "clause": rule_json(r)}
                for r, c in self.clauses
            ],
            "sources": self.sources,
            "accepted": self.result.accepted,
            "noise": self.result.noise,
            "training": self.result.score.to_json(),
            "iterations": self.result.iterations,
            "seconds": round(self.seconds, 2),
            "peak_rss_mib": round(self.peak_rss / 2**20),
        }


def clause_text(rule: Rule, relation: str, sources: dict[str, str], arrow: str = " :- ") -> str:
    """A clause with the graph's relation names, as the counted rules are written (``PathRule.text``):
    ``head(X,Y) :- body(X,A), ...``, the head's variables X and Y, the others A, B, ... in order of
    appearance; constants double-quoted as rules.dl writes them, bare in AnyBURL's syntax (``arrow`` " <= "), as
    :func:`nlndl.constants.text` writes the rules with a constant."""
    names: dict[object, str] = {}
    for kind, value in rule.head_args:
        if kind == "v" and value not in names:
            names[value] = "XY"[len(names)] if len(names) < 2 else f"V{len(names)}"
    fresh = iter("ABCDEFGHIJKLMNOPQRSTUVW")

    def term(arg: tuple[str, object]) -> str:
        kind, value = arg
        if kind != "v":
            return str(value) if arrow == " <= " else quoted(str(value))
        if value not in names:
            names[value] = next(fresh)
        return names[value]

    def atom(name: str, args: tuple) -> str:
        return f"{name}({','.join(term(a) for a in args)})"

    body = [atom(sources.get(a.predicate, a.predicate), a.args) for a in rule.body]
    return f"{atom(relation, rule.head_args)}{arrow}{', '.join(body)}"


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


def learn_relation(
    directory: Path,
    graph: Graph,
    target: str,
    config: KGConfig,
    floor: np.ndarray | None = None,
    held_out: str = "test",
) -> RelationRules:
    """Learn ``target`` from its ``kg sketch`` (compiled in memory) and score what was found. ``floor``: the
    clause pool's floor (:func:`counted_floor`), if the caller has counted the path rules already;
    ``held_out``: the split that will be ranked, whose triples the negatives do not avoid (:func:`kg_sketch`)."""
    diags = Diagnostics()
    made: KGSketch | None = kg_sketch(
        directory, target, diags, config.negatives, config.seed, config.vars, config.memory_limit, graph.triples,
        config.body, config.entries, held_out,
    )  # fmt: skip
    if made is None:
        raise JobError(diags.render())
    start = time.perf_counter()
    located = f"<kg sketch of {target}>"
    try:
        source = SketchText(made.text, located, made.facts, made.parsed(located))
        noisy = bool(config.noise)  # a subgraph's given examples drawn as a sample of the labels
        program = compile_sketch(
            source, seed=config.seed, subgraph=config.subgraph, memory_limit=config.memory_limit, noisy=noisy
        )
    except CompileError as exc:  # located in the sketch kg_sketch wrote: said of the relation instead
        found = " ".join(d.message for d in exc.diagnostics.errors)
        raise JobError(f"{directory}: error: relation {target!r} (as nlndl kg sketch writes it): {found}") from None
    sources = {ident: (target if name == FACT else name) for name, ident in made.relations.items()}
    counted = None
    if floor is None:
        counted = []
        floor = counted_floor(graph, target, config.path_length, config.seed, counted)
    judge = PoolJudge(graph, target, sources, floor)
    learned = LearnConfig(
        train=TrainConfig(seed=config.seed, max_iters=config.max_iters, time_limit=config.time_limit),
        device=config.device,
        memory_limit=config.train_memory,
        noise=config.noise,
        noise_patience=config.noise_patience,
        clauses=True,
        pool_patience=config.pool_patience,
        judge=judge,
    )
    try:
        result = learn(program, fit(program, learned)[0])
    except BudgetError as exc:
        raise JobError(f"{directory}: error: relation {target!r}: {exc}") from None
    seconds = time.perf_counter() - start
    rules = list(dict.fromkeys([*result.rules, *result.clauses]))
    rated = {r: judge.rate(r) for r in rules}  # most were rated as they were read out
    pairs = {r: judge.pairs[r] for r in rules}
    # a rule that derives no known triple of the relation is wrong wherever the graph can tell: read out from
    # an early stop (the counted rules already rank its answers), it is left out of the program
    program_rules = [(r, rated[r][0]) for r in result.rules if rated[r][0] > 0]
    ranking = [
        (r, c) for r, (c, support) in rated.items() if support >= MIN_SUPPORT and not restates(r, target, sources)
    ]
    clauses = sorted(ranking, key=lambda rc: -rc[1])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return RelationRules(
        target, made.relations[target], sources, result, program_rules, clauses, pairs, seconds, rss, counted
    )


def learn_graph(
    directory: Path,
    graph: Graph,
    relations: list[str],
    config: KGConfig,
    progress: Callable[[int, int, str, RelationRules | None], None] | None = None,
    kept: dict[str, RelationRules] | None = None,
    keep: Callable[[RelationRules], None] | None = None,
) -> list[RelationRules] | None:
    """The given relations of ``graph`` (read from ``directory``), learned by ``config.jobs`` worker processes
    at once (:mod:`nlndl.workers`) or, under torchrun, shared round robin among the processes and gathered on
    rank 0 in the given order (None on the other ranks); ``progress`` is told (index, count, relation, None)
    as each is started and (..., learned) as it is done. A relation in ``kept`` (learned by an earlier,
    interrupted run) is taken from there; ``keep`` is given each one learned."""
    at = process_rank(config.device)
    kept = kept or {}
    mine = share(relations, at)
    done: dict[str, RelationRules] = {}

    def started(target: str) -> None:
        if progress:
            progress(relations.index(target), len(relations), target, None)

    def finished(one: RelationRules) -> None:
        done[one.relation] = one
        if keep:
            keep(one)
        if progress:
            progress(relations.index(one.relation), len(relations), one.relation, one)

    for target in mine:
        if target in kept:
            done[target] = kept[target]
            if progress:
                progress(relations.index(target), len(relations), target, kept[target])
    todo = [r for r in mine if r not in kept]
    workers = worker_processes(config, len(todo))
    each_relation(read_graph, learn_relation, directory, graph, todo, config, workers, started, finished)
    return gather([done[r] for r in mine], at)


def worker_processes(config: KGConfig, relations: int) -> int:
    """The worker processes that learn ``relations`` relations at once (:mod:`nlndl.workers`): one, learning
    in this process, under torchrun (which shares the relations among its processes) or on a GPU."""
    if process_rank(config.device).size > 1 or config.device != "cpu":
        return 1
    return worker_count(config.jobs, relations, config.train_memory)


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


@dataclass
class Prediction:
    """One answer to a query: the entity, its score (top-aggregation, :func:`nlndl.ranking.combined`), whether
    the graph already holds the triple, and the rules deriving it, each with its confidence and the weight the
    score gives it (1, or ``DANGLING`` for a dangling rule with a constant), best first by their product (the
    explanation)."""

    entity: str
    score: float
    known: bool
    rules: list[tuple[str, float, float]]

    def to_json(self) -> dict[str, Any]:
        return {
            "entity": self.entity,
            "score": round(self.score, 6),
            "known": self.known,
            "rules": [{"rule": text, "confidence": round(c, 4), "weight": w} for text, c, w in self.rules],
        }


@dataclass
class Answered:
    """A triple asked both ways, ``r(h, ?)`` and ``r(?, t)``: the best heads and tails (entity index, score),
    the other known answers of any split left out, candidates of equal score by popularity; and the rank of
    the triple's own head and tail among every entity (``bench kg``'s protocol, ties at the mean rank)."""

    heads: list[tuple[int, float]]
    tails: list[tuple[int, float]]
    head_rank: float
    tail_rank: float


def answer_all(
    graph: Graph,
    record: dict[str, Any],
    asked: list[tuple[int, int]],
    k: int = 10,
    seed: int = 0,
    length: int = KG_PATH_LENGTH,
) -> list[Answered]:
    """Every (head, tail) pair of ``asked`` asked both ways, by the clauses ``record`` (one relation of kg
    train's rules.json) holds and the relation's counted rules, as :func:`predict` scores one query: the rules
    counted once for all the pairs, each candidate taken by its class (:class:`nlndl.ranking.Classed`), the
    rules with a constant joining them; as ``bench kg`` ranks a split."""
    from nlndl.constants import ConstantRules

    relation = record["relation"]
    sources = {str(a): str(b) for a, b in record["sources"].items()}
    clauses = [(rule_from_json(c["clause"]), float(c["confidence"])) for c in record["clauses"]]
    n = len(graph.entities)
    known = graph.relation_matrix(relation)
    pairs = np.array(asked, dtype=np.int64).reshape(-1, 2)
    ranked = Classed((n, n), known, pairs[:, 0], pairs[:, 1])
    chains = set()
    for rule in paths.each(graph.known_matrices(), relation, length, seed):
        ranked.add_entries(rule.rows, rule.columns, rule.confidence)
        if not rule.reflexive:
            chains.add(rule.atoms)
    clauses = [c for c in clauses if path_of(c[0], sources) not in chains]  # a restatement left to the counted rule
    for derived, (_, confidence) in zip(rule_pairs(graph, [r for r, _ in clauses], sources), clauses, strict=True):
        ranked.add(derived, confidence)
    bodies = graph.bodies()
    constants = ConstantRules.mine(bodies, relation, known).scorer(bodies)
    answers: dict[tuple[int, bool], list[int]] = {}
    for h, t in graph.pairs(relation, SPLITS):
        answers.setdefault((h, True), []).append(t)
        answers.setdefault((t, False), []).append(h)
    prior = dict(zip((True, False), popularity(known), strict=True))  # tails, heads
    rankers = {asks: Ranker(n, prior[asks]) for asks in (True, False)}

    def one(entity: int, answer: int, tail_asked: bool) -> tuple[list[tuple[int, float]], float]:
        candidates, top, log_miss = ranked.merged(entity, tail_asked, constants.reduced(entity, tail_asked))
        scores = combined(top, log_miss)
        others = np.array([a for a in answers.get((entity, tail_asked), []) if a != answer], dtype=np.int64)
        rank = rankers[tail_asked].rank(candidates, scores, answer, others)
        listed = ~np.isin(candidates, others)
        candidates, scores = candidates[listed], scores[listed]
        best = np.lexsort((candidates, -prior[tail_asked][candidates], -scores))[:k]
        return [(int(candidates[i]), float(scores[i])) for i in best], rank

    out = []
    for h, t in pairs.tolist():
        heads, head_rank = one(t, h, False)
        tails, tail_rank = one(h, t, True)
        out.append(Answered(heads, tails, head_rank, tail_rank))
    return out


@dataclass
class RankSettings:
    """What ranking a relation's triples reads beside the graph and the record (:func:`answer_relation`): the
    answers listed per query, and the seed and path length the counted rules are found with."""

    memory_limit: int
    k: int = 10
    seed: int = 0
    length: int = KG_PATH_LENGTH


def answer_relation(
    directory: Path, graph: Graph, target: str, settings: RankSettings, record: dict[str, Any], asked: list
) -> list[Answered]:
    """:func:`answer_all` of one relation, as a module-level function that worker processes are handed
    (:func:`nlndl.workers.each_relation`)."""
    return answer_all(graph, record, asked, settings.k, settings.seed, settings.length)


def predict(
    graph: Graph,
    record: dict[str, Any],
    entity: str,
    tail_asked: bool,
    k: int = 10,
    seed: int = 0,
    length: int = KG_PATH_LENGTH,
) -> list[Prediction]:
    """The ``k`` best answers to ``relation(entity, ?)`` (``tail_asked``) or ``relation(?, entity)``, by the
    clauses ``record`` (one relation of kg train's rules.json) holds and the relation's counted rules, mined
    again from the graph (with the ``seed`` and path ``length`` it was learned with): path rules (nlndl.paths),
    a clause that restates one of them left to it, and rules with a constant (nlndl.constants). Each answer
    comes with the rules that derive it: every clause ranked, and of each kind of counted rule the
    ``EXPLAINED`` best. Answers are scored as ``bench kg`` ranks them (:func:`nlndl.ranking.combined`)."""
    from nlndl.constants import ConstantRules, text, weight

    sources = {str(a): str(b) for a, b in record["sources"].items()}
    relation = record["relation"]
    clauses = [(rule_from_json(c["clause"]), float(c["confidence"])) for c in record["clauses"]]
    clauses = [(rule, c, clause_text(rule, relation, sources)) for rule, c in clauses]
    at = graph.index[entity]

    def line(pairs: sparse.csr_matrix) -> sparse.csr_matrix:
        return boolean(pairs.getrow(at) if tail_asked else pairs.getcol(at).T.tocsr())

    known_pairs = graph.relation_matrix(relation)
    degree, side = cardinality.degrees(known_pairs), 0 if tail_asked else 1
    held = degree[side].copy()  # each candidate's known triples in its role, the asked pair itself left out
    held[line(known_pairs).indices] -= 1
    kind = cardinality.class_of(held)  # each candidate's class, as a ranked triple's is counted

    def classed(pairs: sparse.csr_matrix, confidence: float) -> np.ndarray:
        """A rule's confidence per class of candidate (none where it has none, as the ranking takes it)."""
        if confidence <= 0:
            return np.zeros(cardinality.CLASSES)
        return cardinality.confidences(pairs, known_pairs, degree, confidence)[side]

    counted, chains = [], set()
    for rule in paths.each(graph.known_matrices(), relation, length, seed):
        if not rule.reflexive:
            chains.add(rule.atoms)
        if (row := line(rule.pairs)).nnz:
            counted.append((row, classed(rule.pairs, rule.confidence), rule.text(relation)))
    clauses = [c for c in clauses if path_of(c[0], sources) not in chains]  # a restatement left to the counted rule
    derived = rule_pairs(graph, [r for r, _, _ in clauses], sources)
    rows = [(line(p), classed(p, c), t) for p, (_, c, t) in zip(derived, clauses, strict=True)]
    n = len(graph.entities)
    bodies = graph.bodies()
    constants = ConstantRules.mine(bodies, relation, known_pairs).scorer(bodies)
    ranked = Aggregate((1, n))
    for row, by, _ in rows + counted:
        for part, confidence in zip(by_class(row, kind, True), by, strict=True):
            ranked.add(part, confidence)
    scores = ranked.line(0, True, n, extra=constants.reduced(at, tail_asked))
    known = graph.pairs(relation, KNOWN)
    order = [int(i) for i in np.argsort(-scores, kind="stable") if scores[i] > 0][:k]
    out = []
    for other in order:
        why = [(t, float(by[kind[other]]), 1.0) for row, by, t in rows if row[0, other]]
        best = [(t, float(by[kind[other]]), 1.0) for row, by, t in counted if row[0, other]]
        best.sort(key=lambda tc: -tc[1])
        why += best[:EXPLAINED]
        for rule, counts in constants.explain(at, tail_asked, other):  # counts: the confidence as weighed
            _, _, _, closed = rule
            share = weight(closed)
            why.append((text(bodies, relation, rule, graph.entities), float(counts / share), share))
        pair = (at, other) if tail_asked else (other, at)
        why.sort(key=lambda tcw: -tcw[1] * tcw[2])
        out.append(Prediction(graph.entities[other], float(scores[other]), pair in known, why))
    return out
