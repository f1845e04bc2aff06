"""Knowledge-graph completion with rules: the path-rule baseline and the ranking of learned rules.

The baseline mines, for a target relation r, every rule r(X, Y) :- p(X, Y) and r(X, Y) :- p(X, Z), q(Z, Y)
over the graph's relations, each atom possibly inverted (p(Y, X)), on facts.txt + train.txt; a rule's
confidence is its support (known r pairs it derives) over its body count (pairs it derives). Learned
Datalog rules are scored the same way: each rule's derived pairs, by the crisp evaluator, with its
confidence on the same triples. The baseline ranks candidates by the best confidence of the rules that derive
them (and, beside it, their noisy-or); nlndl by that best confidence raised by the next few's
(:func:`nlndl.ranking.combined`, max and noisy-or beside it); those of equal score by how often they answer
the relation in the known triples (nlndl.ranking), filtered, both directions, mean-rank ties. nlndl's
clauses rank together with the counted rules and the rules with a constant (nlndl.constants), which no clause
of a sketch expresses; the baseline is recorded with and without the latter, and nlndl's clauses alone, so
that each part's share is seen.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from nlndl import paths, rule_weights
from nlndl.cardinality import CLASSES, SHRINK
from nlndl.compiler.triples import QUERY_SHARE, SPLITS, split_path, standard_layout
from nlndl.constants import DANGLING, MIN_CORRECT, UNSEEN, ConstantRules
from nlndl.distributed import gather, process_rank, share
from nlndl.errors import JobError
from nlndl.kg_rules import (
    Graph,
    KGConfig,
    RelationRules,
    checked_relations,
    known_keys,
    learn_relation,
    path_of,
    raise_floor,
    read_graph,
    worker_processes,
)
from nlndl.paths import LENGTH, MAX_JOINED, SAMPLE, THREE_ATOM_PATHS
from nlndl.paths import MIN_CORRECT as PATH_MIN_CORRECT
from nlndl.ranking import (
    AGGREGATION,
    DAMPING,
    TOP,
    Aggregate,
    Classed,
    Extra,
    Metrics,
    Ranked,
    metrics,
    popularity,
    ranks_of,
)
from nlndl.workers import each_relation, one_thread


def path_rules(graph: Graph, target: str, length: int = LENGTH) -> list[tuple[str, sparse.csr_matrix, float]]:
    """The baseline's rules for ``target``: (text, derived pairs, confidence), mined on facts + train: the
    counted path rules of up to ``length`` atoms (:mod:`nlndl.paths`)."""
    return [(r.text(target), r.pairs, r.confidence) for r in paths.each(graph.known_matrices(), target, length)]


def check_layout(directory: Path) -> None:
    """JobError unless ``directory`` holds a graph to rank: train.txt and test.txt (each possibly gzipped)."""
    if not split_path(directory, "train").is_file() or not split_path(directory, "test").is_file():
        raise JobError(f"{directory}: error: needs train.txt and test.txt (and facts.txt in the Neural LP layout)")


NEGATIVES = {  # per split ranked, what the negatives avoid (compiler.triples.kg_sketch's held_out)
    "test": "never a triple of facts.txt, train.txt or valid.txt; test.txt's are drawn as any triple the learner "
    "does not know",
    "valid": "never a triple of facts.txt or train.txt; valid.txt's, ranked here, are drawn as any triple the "
    "learner does not know (nor are test.txt's avoided)",
}


def protocol(directory: Path, split: str = "test") -> dict[str, str]:
    """What the rules read while learning, how a target's own triples are kept from proving themselves, and
    what they read when the triples of ``split`` are ranked: said in every record."""
    if standard_layout(directory):
        learning = (
            f"train.txt is the graph; for each target relation, {QUERY_SHARE:.0%} of its train.txt triples "
            "(drawn with the seed) are the positive examples and are left out of the graph the rules read "
            "while learning, the rest of them stay in it as <target>_fact"
        )
    else:
        learning = "facts.txt is the graph (the target's own triples as <target>_fact); train.txt the positives"
    return {
        "learning": f"{learning}; negatives: each positive's head or tail corrupted, {NEGATIVES[split]}",
        "confidence": "support / body count on facts.txt + train.txt (train.txt alone in the standard layout)",
        "ranking": "rules read facts.txt + train.txt (train.txt in the standard layout); each "
        f"{split} triple asked both ways, the other triples of train, valid and test filtered; candidates of "
        "equal score ordered by how many known triples of the relation they answer (rules without a body), the "
        "rest tied at the mean rank",
        "paths": f"path rules r(X, Y) :- p(X, A), q(A, B), s(B, Y) of up to the path length, each atom read either "
        f"way, counted on the same triples: every path of two atoms that joins a known pair, and of three atoms the "
        f"{THREE_ATOM_PATHS} joining the most of {SAMPLE} known pairs drawn with the seed (walked in a seeded order "
        f"until {MAX_JOINED:,} paths have been met), with object identity (B is "
        f"not X, A is not Y, X is not Y; what a body derives for X = Y is a reflexive rule r(X, X) :- ... of its "
        f"own); kept where they derive at least {PATH_MIN_CORRECT} known triples, confidence correct / predicted; "
        "the baseline's rules, and ranked with nlndl's clauses (those no clause restates)",
        "classes": f"in nlndl's rankings, a path rule's or a clause's confidence for a candidate is counted apart "
        f"for the direction asked and the candidate's class, the known triples of the relation it holds in the role "
        f"asked (0, 1, {CLASSES - 1} or more; a known pair classes its candidate without itself), shrunk towards "
        f"the rule's one confidence by {SHRINK:g} pairs, and no higher than it",
        "constants": f"rules r(X, c) :- s(X, d) and r(X, c) :- s(X, _) (and r(c, Y) ...), s any relation either way, "
        f"mined on the same triples: kept where they derive at least {MIN_CORRECT} known triples, confidence "
        f"correct / (predicted + {UNSEEN}); a dangling rule (s(X, _)) counts at {DANGLING} of its confidence in a "
        "score",
    }


def tested_relations(graph: Graph, relations: list[str], directory: Path, split: str = "test") -> list[str]:
    """Those of ``relations`` with triples in ``split`` (test, or valid to tune on): the others have nothing to
    rank (JobError, before any work, when none has)."""
    tested = [r for r in relations if graph.splits[split].get(r)]
    if not tested and not any((directory / f"{split}.txt{gz}").exists() for gz in ("", ".gz")):
        raise JobError(f"{directory / (split + '.txt')}: error: not found: --split {split} ranks its triples")
    if not tested:
        raise JobError(
            f"{directory / (split + '.txt')}: error: no {split} triples of {', '.join(repr(r) for r in relations[:5])}"
            f"{' ...' if len(relations) > 5 else ''}: nothing to rank"
        )
    return tested


def split_ranks(graph: Graph, target: str, rules: Aggregate, split: str = "test", how: str = AGGREGATION) -> np.ndarray:
    """The ranks of ``target``'s triples of ``split`` by ``rules``, both ways: the other triples of every split
    filtered, candidates of equal score ordered by the relation's popularity (:func:`nlndl.ranking.ranks`)."""
    return split_ranks_of(graph, target, [(rules, how, False)], split)[0]


def split_ranks_of(
    graph: Graph,
    target: str,
    many: list[Ranked],
    split: str = "test",
    extra: Extra | None = None,
) -> list[np.ndarray]:
    """:func:`split_ranks` of several rankings, each with the rules of ``extra`` (the rules with a constant)
    taken in or not (:func:`nlndl.ranking.ranks_of`)."""
    test = sorted(graph.pairs(target, (split,)))
    return ranks_of(many, test, graph.pairs(target, SPLITS), popularity(graph.relation_matrix(target)), extra)


def evaluate_rules(
    graph: Graph, target: str, rules: list[tuple[sparse.csr_matrix, float]], how: str = "max", split: str = "test"
) -> Metrics:
    """Filtered MRR and Hits@k of ranking by the aggregate (:data:`nlndl.ranking.AGGREGATIONS`) of ``rules`` on
    the target's triples of ``split``."""
    n = len(graph.entities)
    return metrics(split_ranks(graph, target, Aggregate.of(rules, (n, n)), split, how))


def baseline(graph: Graph, target: str, length: int = LENGTH, how: str = "max") -> Metrics:
    mined = path_rules(graph, target, length)
    return evaluate_rules(graph, target, [(pairs, conf) for _, pairs, conf in mined], how)


def crisp_test(graph: Graph, target: str, pairs: list[sparse.csr_matrix], split: str = "test") -> dict[str, float]:
    """The crisp program (every rule, no confidences) on the triples of ``split``: of the pairs it derives that
    no other split holds, the fraction that ``split`` holds (precision), and its triples it derives (recall)."""
    n = len(graph.entities)
    derived = paths.boolean(sum((paths.boolean(m) for m in pairs), sparse.csr_matrix((n, n), dtype=np.float32)))
    test = graph.matrix(graph.pairs(target, (split,)))
    others = graph.matrix(graph.pairs(target, tuple(s for s in SPLITS if s != split)))
    found = derived.multiply(test)  # derived pairs that split holds
    new = derived.nnz - derived.multiply(others).nnz  # derived pairs no other split holds
    new_found = found.nnz - found.multiply(others).nnz
    return {
        "test_precision": new_found / new if new else 1.0,
        "test_recall": found.nnz / test.nnz if test.nnz else 1.0,
    }


def nlndl_rankings(
    learned: RelationRules, counted: Classed, chains: set[tuple[paths.Atom, ...]], n: int, asked: np.ndarray
) -> list[Ranked]:
    """nlndl's rankings of one relation's ``asked`` (head, tail) pairs: its clauses with the counted rules
    (``counted``: the path rules, whose paths are ``chains``; the rules with a constant joining them) by top-,
    max- and noisy-or aggregation, a clause that restates a counted path rule left to that rule; then the
    clauses alone and the program alone."""
    for rule, conf in learned.clauses:
        if path_of(rule, learned.sources) not in chains:
            counted.add(learned.pairs[rule], conf)
    return [
        (counted, "top", True),
        (counted, "max", True),
        (counted, "noisy-or", True),
        (learned.rules((n, n), asked=asked), AGGREGATION, False),
        (learned.rules((n, n), clauses=False, asked=asked), AGGREGATION, False),
    ]


def nlndl_row(graph: Graph, learned: RelationRules, ranks: list[np.ndarray], split: str = "test") -> dict[str, Any]:
    """nlndl's row for one relation from the ranks of :func:`nlndl_rankings`: MRR and Hits@k of each, the
    program's rules with their confidence and their precision / recall on test."""
    found, best, other, clauses, alone = ranks
    target = learned.relation
    own = learned.to_json()
    rules = [
        {"rule": text, "confidence": conf, **crisp_test(graph, target, [learned.pairs[rule]], split)}
        for text, conf, (rule, _) in zip(own.pop("rules"), own.pop("confidences"), learned.program, strict=True)
    ]
    return {
        **metrics(found).to_json(),
        "max": metrics(best).to_json(),
        "noisy-or": metrics(other).to_json(),
        "clauses_alone": metrics(clauses).to_json(),
        "program": {
            **metrics(alone).to_json(),
            **crisp_test(graph, target, [learned.pairs[r] for r, _ in learned.program], split),
        },
        "rules": rules,
        "clauses_read": len(learned.result.clauses),
        **own,
    }


@dataclass
class Counted:
    """A relation's counted path rules (:mod:`nlndl.paths`), counted once for learning and ranking alike: the
    clause pool's floor (per known pair), the rules as the ranking reads them (their pairs in the rows and
    columns of the triples asked about), and the paths they hold (a clause restating one is not ranked twice)."""

    rules: Aggregate
    classed: Classed  # the same rules, confidences by the candidate's class (nlndl.cardinality)
    chains: set[tuple[paths.Atom, ...]]
    count: int
    floor: np.ndarray | None
    fitted: rule_weights.Weighed | None = None  # the same rules with fitted weights (KGConfig.fit_weights)


def count_paths(graph: Graph, target: str, config: KGConfig, asked: np.ndarray, floor: bool = False) -> Counted:
    """``target``'s path rules of up to ``config.path_length`` atoms for ranking ``asked`` (head, tail) pairs,
    with the pool's floor (:func:`nlndl.kg_rules.counted_floor`) if ``floor``, and with
    ``config.fit_weights`` the same rules with weights fitted on held-out triples (:mod:`nlndl.rule_weights`)."""
    n = len(graph.entities)
    known = graph.relation_matrix(target)
    rules = Aggregate((n, n), asked[:, 0], asked[:, 1])
    classed = Classed((n, n), known, asked[:, 0], asked[:, 1])
    best = np.zeros(known.nnz, dtype=np.float64) if floor else None
    keys = known_keys(known)
    fitted = None
    if config.fit_weights:
        names, weights = rule_weights.fitted(graph.known_matrices(), target, config.path_length, config.seed)
        over = rule_weights.RuleSet.over(names, graph.bodies(), target, known, asked[:, 0], asked[:, 1])
        fitted = rule_weights.Weighed(over, weights, known)
    chains: set[tuple[paths.Atom, ...]] = set()
    count = 0
    for rule in paths.each(graph.known_matrices(), target, config.path_length, config.seed):
        if best is not None:
            raise_floor(best, keys, rule)
        rules.add_entries(rule.rows, rule.columns, rule.confidence)
        classed.add_entries(rule.rows, rule.columns, rule.confidence)
        if fitted is not None:
            fitted.take((rule.atoms, rule.reflexive), rule.rows, rule.columns, rule.confidence)
        if not rule.reflexive:
            chains.add(rule.atoms)
        count += 1
    return Counted(rules, classed, chains, count, best, fitted)


def untrained_ranks(graph: Graph, target: str, split: str) -> np.ndarray:
    """The ranks of ``target``'s triples of ``split`` where it has no training triples: no rule derives any
    candidate, so each answer is ranked by the rules without a body alone, ties at the mean rank."""
    n = len(graph.entities)
    return split_ranks_of(graph, target, [(Aggregate((n, n)), "top", False)], split)[0]


def asked_pairs(graph: Graph, target: str, split: str) -> np.ndarray:
    """The (head, tail) pairs of ``target``'s triples of ``split``, sorted, as an (n, 2) array."""
    return np.array(sorted(graph.pairs(target, (split,))), dtype=np.int64).reshape(-1, 2)


def learn_and_rank(
    directory: Path, graph: Graph, target: str, config: KGConfig, split: str
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Learn ``target`` and rank its triples of ``split`` (:func:`rank_relation`), its path rules counted once
    for both: the clause pool's floor while learning, the ranking after. The triples ranked only choose which
    of the counted pairs the ranking keeps (their heads' rows, their tails' columns): nothing of them reaches
    the floor or the learning. A module-level function, so that worker processes take relations side by side."""
    start = time.perf_counter()
    counted = count_paths(graph, target, config, asked_pairs(graph, target, split), floor=True)
    counting = time.perf_counter() - start
    learned = learn_relation(directory, graph, target, config, counted.floor, split)
    learned.seconds += counting  # a relation's learning takes in the counting of its floor
    return rank_relation(directory, graph, target, config, split, learned, counted)


def run(
    directory: Path,
    relations: list[str] | None,
    config: KGConfig,
    learn: bool,
    progress: Callable[[str], None] | None = None,
    graph: Graph | None = None,
    split: str = "test",
) -> dict[str, Any] | None:
    """Per relation the baseline's metrics (paths of up to ``config.path_length`` atoms) and, with ``learn``, nlndl's;
    both over all relations (micro), each ranked by max-aggregation and, beside it, by noisy-or. Relations are
    taken side by side by worker processes, each learning (with ``learn``) and ranking one relation at a time;
    under torchrun the processes share them and rank 0 reports (None on the others). ``graph``: the one in
    ``directory``, if already read."""
    started = time.perf_counter()
    graph = graph if graph is not None else Graph.read(directory, config.memory_limit)
    every = checked_relations(graph, relations, directory)
    chosen = tested_relations(graph, every, directory, split)
    at = process_rank(config.device)
    work = learn_and_rank if learn else rank_relation
    mine = share(chosen, at)
    workers = worker_processes(config, len(mine))
    told = progress or (lambda target: None)
    finished = (lambda got: told(got[0]["relation"])) if learn else (lambda got: None)
    started_one = (lambda target: None) if learn else told
    tasks = {t: (split,) for t in mine}
    doing, here = ("learning", one_thread) if learn else ("ranking", nullcontext)
    done = each_relation(
        read_graph, work, directory, graph, mine, config, workers, started_one, finished, tasks, doing, here
    )
    gathered = gather([done[t] for t in mine], at)
    if gathered is None:  # rank 0 reports; the others wait until it has
        at.barrier()
        return None
    # asked for every relation: the split's triples of a relation with nothing to learn from count too
    untrained = [] if relations else [r for r in graph.relations if graph.splits[split].get(r) and r not in every]
    unlearned = {r: untrained_ranks(graph, r, split) for r in untrained}
    try:
        return _report(
            directory, every, chosen, dict(zip(chosen, gathered, strict=True)), config, learn, split, started,
            unlearned,
        )  # fmt: skip
    finally:
        if at.size > 1:
            at.barrier()


def rank_relation(
    directory: Path,
    graph: Graph,
    target: str,
    config: KGConfig,
    split: str,
    learned: RelationRules | None = None,
    counted: Counted | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """One relation's row of the report and its ranks (baseline, and with ``learned`` nlndl's), its path rules
    counted here unless given (``counted``, by :func:`count_paths` for the same split). A module-level function,
    so that worker processes rank relations side by side."""
    start = time.perf_counter()
    n = len(graph.entities)
    bodies = graph.bodies()
    asked = asked_pairs(graph, target, split)
    counted = counted if counted is not None else count_paths(graph, target, config, asked)
    base = counted.rules
    constants = ConstantRules.mine(bodies, target, graph.relation_matrix(target))
    classed = counted.classed
    rankings: list[Ranked] = [
        (base, "max", False),
        (base, "noisy-or", False),
        (base, "max", True),
        (classed, "top", True),
    ]
    if learned is not None:
        rankings += nlndl_rankings(learned, classed.copy(), counted.chains, n, asked)
    # one pass over the queries, so that each query's rules with a constant are gathered once for all rankings
    found = split_ranks_of(graph, target, rankings, split, constants.scorer(bodies).reduced)
    ranks = dict(zip(("base", "base_or", "base_const", "counted"), found[:4], strict=True))
    row: dict[str, Any] = {"relation": target, "test": len(asked), "baseline": metrics(ranks["base"]).to_json()}
    row["baseline"]["noisy-or"] = metrics(ranks["base_or"]).to_json()
    row["baseline"]["constants"] = metrics(ranks["base_const"]).to_json()
    row["baseline"]["counted_top"] = metrics(ranks["counted"]).to_json()
    if counted.fitted is not None:
        test = sorted(graph.pairs(target, (split,)))
        prior = popularity(graph.relation_matrix(target))
        ranks["fitted"] = rule_weights.ranked(counted.fitted, test, graph.pairs(target, SPLITS), prior)
        row["baseline"]["fitted"] = metrics(ranks["fitted"]).to_json()
    row["baseline"]["seconds"] = round(time.perf_counter() - start, 2)  # every ranking (and counting, if done here)
    row["baseline"]["rules"] = counted.count
    row["constant_rules"] = constants.count()
    if learned is not None:
        row["nlndl"] = nlndl_row(graph, learned, found[4:], split)
        ranks.update(zip(("nln", "nln_max", "nln_or", "clauses"), found[4:8], strict=True))
    return row, ranks


def _report(
    directory: Path,
    every: list[str],
    chosen: list[str],
    done: dict[str, tuple[dict[str, Any], dict[str, np.ndarray]]],
    config: KGConfig,
    learn: bool,
    split: str,
    started: float,
    unlearned: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """The report of :func:`run` from each relation's row and ranks (``done``): the rows and the totals.
    ``unlearned``: the ranks of the relations with triples to rank and none to learn from
    (:func:`untrained_ranks`), the same in every ranking."""
    rows, alone_all = [], []
    totals: dict[str, list[np.ndarray]] = {
        k: [] for k in ("base", "base_or", "base_const", "counted", "fitted", "nln", "nln_max", "nln_or", "clauses")
    }
    for target in chosen:
        row, ranks = done[target]
        for key, found in ranks.items():
            totals[key].append(found)
        if learn:
            alone_all.append(row["nlndl"]["program"])
        rows.append(row)
    rows += [{"relation": r, "test": 0, "note": f"no {split} triples"} for r in every if r not in chosen]
    for target, found in (unlearned or {}).items():
        for key in totals:
            totals[key].append(found)
        note = "no training triples: ranked by no rule"
        rows.append({"relation": target, "test": found.size // 2, "note": note, "baseline": metrics(found).to_json()})
        if learn:
            alone_all.append(rows[-1]["baseline"])
    out = {"data": directory.name, "relations": rows, "baseline": metrics(np.concatenate(totals["base"])).to_json()}
    out["baseline_noisy_or"] = metrics(np.concatenate(totals["base_or"])).to_json()
    out["baseline_constants"] = metrics(np.concatenate(totals["base_const"])).to_json()
    out["counted_top"] = metrics(np.concatenate(totals["counted"])).to_json()  # nlndl's ranking without clauses
    if config.fit_weights:
        out["counted_fitted"] = metrics(np.concatenate(totals["fitted"])).to_json()
    out["split"] = split  # the triples ranked: test, or valid to tune on
    out["path_length"] = config.path_length
    out["aggregation"] = (
        f"nlndl: top, 1 - (1 - c1) (1 - {DAMPING} c2) ... (1 - {DAMPING} c{TOP}) over the confidences of the rules "
        "deriving a candidate, best first: the counted path rules (nlndl.paths), nlndl's clauses that restate "
        "none of them and the rules with a constant (nlndl.constants); nlndl_max (ties broken by noisy-or) and "
        "nlndl_noisy_or beside it; in these, the path rules' and the clauses' confidences by the candidate's "
        "class (nlndl.cardinality). baseline: the counted path rules by max, baseline_noisy_or beside it; "
        "baseline_constants: the path rules and the rules with a constant, by max; counted_top: the same by top "
        "with the confidences by class, nlndl's ranking without its clauses"
    )
    out["protocol"] = protocol(directory, split)
    out["processes"] = process_rank(config.device).size
    out["seconds"] = round(time.perf_counter() - started, 1)
    peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    out["peak_rss_mib"] = round(peak / 1024)  # the largest process: this one or a worker that learned relations
    if learn:
        out["nlndl"] = metrics(np.concatenate(totals["nln"])).to_json()
        out["nlndl_max"] = metrics(np.concatenate(totals["nln_max"])).to_json()
        out["nlndl_noisy_or"] = metrics(np.concatenate(totals["nln_or"])).to_json()
        out["nlndl_clauses"] = metrics(np.concatenate(totals["clauses"])).to_json()
        weights = [r["queries"] for r in alone_all]
        out["nlndl_program"] = {
            k: float(np.average([r[k] for r in alone_all], weights=weights))
            for k in ("mrr", "hits@1", "hits@3", "hits@10")
        }
        out["config"] = asdict(config)
        out["workers_per_process"] = worker_processes(config, len(chosen))
    return out


def markdown(report: dict[str, Any]) -> str:
    """Per relation and over all: MRR and Hits@k of the baseline and (if run) nlndl (clauses and rules with a
    constant), its program's MRR, and the program's rules with confidence and test precision / recall."""
    learn = "nlndl" in report
    head = "| relation | test | baseline MRR | H@1 | H@10 |" + (
        " nlndl MRR | H@1 | H@10 | program MRR | s | rules (confidence, test precision / recall) |" if learn else ""
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]

    def cells(m: dict[str, Any]) -> list[str]:
        return [f"{m['mrr']:.3f}", f"{m['hits@1']:.3f}", f"{m['hits@10']:.3f}"]

    for row in report["relations"]:
        if "note" in row:
            width = head.count("|") - 3
            line = [row["relation"], str(row["test"]), row["note"], *[""] * (width - 1)]
            lines.append("| " + " | ".join(line) + " |")
            continue
        line = [row["relation"], str(row["test"]), *cells(row["baseline"])]
        if learn:
            own = row["nlndl"]
            line += [*cells(own), f"{own['program']['mrr']:.3f}", f"{own['seconds']:.0f}"]
            line.append(
                "<br>".join(
                    f"`{r['rule']}` ({r['confidence']:.2f}, {r['test_precision']:.2f} / {r['test_recall']:.2f})"
                    for r in own["rules"]
                )
                or "-"
            )
        lines.append("| " + " | ".join(line) + " |")
    total = ["all", str(report["baseline"]["queries"] // 2), *cells(report["baseline"])]
    if learn:
        total += [*cells(report["nlndl"]), f"{report['nlndl_program']['mrr']:.3f}", "", ""]
    lines.append("| " + " | ".join(total) + " |")
    if "baseline_noisy_or" in report:
        total = ["all, noisy-or", str(report["baseline"]["queries"] // 2), *cells(report["baseline_noisy_or"])]
        if learn:
            total += [*cells(report["nlndl_noisy_or"]), "", "", ""]
        lines.append("| " + " | ".join(total) + " |")
    if "baseline_constants" in report:
        total = ["all: baseline with constants; nlndl's clauses alone", "", *cells(report["baseline_constants"])]
        if learn:
            total += [*cells(report["nlndl_clauses"]), "", "", ""]
        lines.append("| " + " | ".join(total) + " |")
    for key, label in (
        ("counted_top", "all: counted rules by top-aggregation"),
        ("counted_fitted", "all: counted rules, weights fitted on held-out triples"),
    ):
        if key in report:
            total = [label, "", *cells(report[key])]
            lines.append("| " + " | ".join(total + [""] * (head.count("|") - 6)) + " |")
    return "\n".join(lines)
