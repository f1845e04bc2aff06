"""Knowledge-graph completion with rules: the path-rule baseline and the ranking of learned rules.

The baseline mines, for a target relation r, every rule r(X, Y) :- p(X, Y) and r(X, Y) :- p(X, Z), q(Z, Y)
over the graph's relations, each atom possibly inverted (p(Y, X)), on facts.txt + train.txt; a rule's
confidence is its support (known r pairs it derives) over its body count (pairs it derives). Learned
Datalog rules are scored the same way: each rule's derived pairs, by the crisp evaluator, with its
confidence on the same triples. Candidates are ranked by the noisy-or of the confidences of the rules that
derive them (nlndl.ranking), filtered, both directions, mean-rank ties.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from nlndl.compiler.crisp import Rule, evaluate
from nlndl.compiler.diagnostics import Diagnostics
from nlndl.compiler.triples import SPLITS, Triple, read_splits
from nlndl.ranking import Metrics, metrics, noisy_or, ranks

MIN_SUPPORT = 1  # known pairs a mined rule must derive to be kept


@dataclass
class Graph:
    """A knowledge graph's entities (index by name), and per split its triples as index pairs by relation."""

    entities: list[str]
    index: dict[str, int]
    triples: dict[str, list[Triple]]  # per split, as read
    splits: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path) -> Graph:
        """Read facts, train, valid and test (those present); ValueError with the located errors."""
        diags = Diagnostics()
        raw = read_splits(directory, diags)
        if diags:
            raise ValueError(diags.render())
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


def path_rules(graph: Graph, target: str) -> list[tuple[str, sparse.csr_matrix, float]]:
    """The baseline's rules for ``target``: (text, derived pairs, confidence), mined on facts + train."""
    seen = ("facts", "train")
    known = graph.matrix(graph.pairs(target, seen))
    atoms = []
    for p in graph.relations:
        a = graph.matrix(graph.pairs(p, seen))
        atoms += [(f"{p}(X,Y)", p, a), (f"{p}(Y,X)", p, a.T.tocsr())]
    out = []
    for text, p, a in atoms:
        if p == target and text.endswith("(X,Y)"):
            continue  # the rule r(X,Y) :- r(X,Y) derives only what is known
        conf, support = confidence((a > 0).astype(np.int8), known)
        if support >= MIN_SUPPORT:
            out.append((f"{target}(X,Y) :- {text}", (a > 0).astype(np.int8), conf))
    for t1, _, a in atoms:
        for t2, _, b in atoms:
            body = ((a @ b) > 0).astype(np.int8)
            conf, support = confidence(body, known)
            if support >= MIN_SUPPORT:
                first, second = t1.replace("Y", "Z"), t2.replace("X", "Z")
                out.append((f"{target}(X,Y) :- {first}, {second}", body, conf))
    return out


def rule_pairs(graph: Graph, rules: list[Rule], names: dict[str, str]) -> list[sparse.csr_matrix]:
    """Each learned rule's derived (head, tail) pairs on facts + train, by the crisp evaluator over entity
    indices; ``names`` maps the graph's relation names to the sketch's identifiers (rules over variables:
    a constant in a learned rule is the sketch's, which the graph does not share)."""
    db = {names[r]: graph.pairs(r, ("facts", "train")) for r in graph.relations}
    out = []
    for rule in rules:
        alone = Rule("derived__", rule.head_args, rule.body)
        model = evaluate({k: set(v) for k, v in db.items()}, [alone])
        out.append(graph.matrix(set(model.get("derived__", set()))))
    return out


def evaluate_rules(graph: Graph, target: str, rules: list[tuple[sparse.csr_matrix, float]]) -> Metrics:
    """Filtered MRR and Hits@k of ranking by the noisy-or of ``rules`` on the target's test triples."""
    n = len(graph.entities)
    scores = noisy_or(rules, (n, n))
    test = sorted(graph.pairs(target, ("test",)))
    known = graph.pairs(target, SPLITS)
    return metrics(ranks(scores, test, known))


def baseline(graph: Graph, target: str) -> Metrics:
    mined = path_rules(graph, target)
    return evaluate_rules(graph, target, [(pairs, conf) for _, pairs, conf in mined])


def learned(
    directory: Path,
    graph: Graph,
    target: str,
    seed: int,
    time_limit: float,
    noise: float | None,
    subgraph: int | None,
) -> dict[str, Any]:
    """nlndl on one relation: ``kg sketch`` (2 corrupted negatives per positive), compile, train; its rules
    ranked with their confidences on facts + train."""
    from nlndl import api
    from nlndl.compiler.triples import kg_sketch

    diags = Diagnostics()
    made = kg_sketch(directory, target, diags, seed=seed, splits=graph.triples)
    if made is None:
        raise ValueError(diags.render())
    with tempfile.TemporaryDirectory(prefix="nlndl-kg-") as tmp:
        (Path(tmp) / "sketch.dl").write_text(made.text)
        for name, text in made.facts.items():
            (Path(tmp) / f"{name}.facts").write_text(text)
        start = time.perf_counter()
        program = api.compile(Path(tmp) / "sketch.dl", seed=seed, subgraph=subgraph)
        result = api.train(program, seed=seed, time_limit=time_limit, noise=noise)
        seconds = time.perf_counter() - start
    known = graph.matrix(graph.pairs(target, ("facts", "train")))
    pairs = rule_pairs(graph, result.rules, made.relations)
    scored = [(p, confidence(p, known)[0]) for p in pairs]
    test = sorted(graph.pairs(target, ("test",)))
    n = len(graph.entities)
    found = ranks(noisy_or(scored, (n, n)), test, graph.pairs(target, SPLITS))
    return {
        "rules": result.rule_texts(),
        "confidences": [round(c, 4) for _, c in scored],
        **crisp_test(graph, target, pairs),
        "accepted": result.accepted,
        "iterations": result.iterations,
        "seconds": round(seconds, 2),
        "ranks": found.tolist(),
    }


def crisp_test(graph: Graph, target: str, pairs: list[sparse.csr_matrix]) -> dict[str, float]:
    """The crisp program (every rule, no confidences) on the test triples: of the pairs it derives that no
    other split holds, the fraction that test.txt holds (precision), and the test triples it derives (recall)."""
    derived = {(int(h), int(t)) for m in pairs for h, t in zip(*m.nonzero(), strict=True)}
    test = graph.pairs(target, ("test",))
    new = derived - graph.pairs(target, ("facts", "train", "valid"))
    return {
        "test_precision": len(new & test) / len(new) if new else 1.0,
        "test_recall": len(derived & test) / len(test) if test else 1.0,
    }


def run(
    directory: Path,
    relations: list[str] | None,
    seed: int,
    time_limit: float,
    noise: float | None,
    subgraph: int | None,
    learn: bool,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Per relation the baseline's metrics and, with ``learn``, nlndl's; both over all relations (micro)."""
    graph = Graph.read(directory)
    chosen = relations or graph.relations
    unknown = sorted(set(chosen) - set(graph.relations))
    if unknown:
        raise ValueError(f"no relation {unknown[0]!r} in {directory} (it has {', '.join(graph.relations)})")
    rows, base_all, nln_all = [], [], []
    n = len(graph.entities)
    for target in chosen:
        if progress:
            progress(target)
        start = time.perf_counter()
        mined = path_rules(graph, target)
        test = sorted(graph.pairs(target, ("test",)))
        base = ranks(noisy_or([(p, c) for _, p, c in mined], (n, n)), test, graph.pairs(target, SPLITS))
        row: dict[str, Any] = {"relation": target, "test": len(test), "baseline": metrics(base).to_json()}
        row["baseline"]["seconds"] = round(time.perf_counter() - start, 2)
        base_all.append(base)
        if learn:
            own = learned(directory, graph, target, seed, time_limit, noise, subgraph)
            found = np.array(own.pop("ranks"))
            row["nlndl"] = {**metrics(found).to_json(), **own}
            nln_all.append(found)
        rows.append(row)
    out = {"data": directory.name, "relations": rows, "baseline": metrics(np.concatenate(base_all)).to_json()}
    if learn:
        out["nlndl"] = metrics(np.concatenate(nln_all)).to_json()
    return out


def markdown(report: dict[str, Any]) -> str:
    """Per relation and over all: MRR and Hits@k of the baseline and (if run) nlndl, and nlndl's rules."""
    learn = "nlndl" in report
    head = "| relation | test | baseline MRR | H@1 | H@10 |" + (
        " nlndl MRR | H@1 | H@10 | s | rules |" if learn else ""
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]

    def cells(m: dict[str, Any]) -> list[str]:
        return [f"{m['mrr']:.3f}", f"{m['hits@1']:.3f}", f"{m['hits@10']:.3f}"]

    for row in report["relations"]:
        line = [row["relation"], str(row["test"]), *cells(row["baseline"])]
        if learn:
            own = row["nlndl"]
            line += [*cells(own), f"{own['seconds']:.0f}", f"{own['test_precision']:.2f} / {own['test_recall']:.2f}"]
            line.append("<br>".join(f"`{r}`" for r in own["rules"]) or "-")
        lines.append("| " + " | ".join(line) + " |")
    total = ["all", str(report["baseline"]["queries"] // 2), *cells(report["baseline"])]
    if learn:
        total += [*cells(report["nlndl"]), "", "", ""]
    lines.append("| " + " | ".join(total) + " |")
    return "\n".join(lines)
