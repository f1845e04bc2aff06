"""Knowledge-graph completion with rules: the path-rule baseline and the ranking of learned rules.

The baseline mines, for a target relation r, every rule r(X, Y) :- p(X, Y) and r(X, Y) :- p(X, Z), q(Z, Y)
over the graph's relations, each atom possibly inverted (p(Y, X)), on facts.txt + train.txt; a rule's
confidence is its support (known r pairs it derives) over its body count (pairs it derives). Learned
Datalog rules are scored the same way: each rule's derived pairs, by the crisp evaluator, with its
confidence on the same triples. Candidates are ranked by the noisy-or of the confidences of the rules that
derive them (nlndl.ranking), filtered, both directions, mean-rank ties.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import sparse

from nlndl.compiler.crisp import Rule, evaluate
from nlndl.compiler.diagnostics import Diagnostics
from nlndl.compiler.triples import SPLITS, read_triples
from nlndl.ranking import Metrics, metrics, noisy_or, ranks

MIN_SUPPORT = 1  # known pairs a mined rule must derive to be kept


@dataclass
class Graph:
    """A knowledge graph's entities (index by name), and per split its triples as index pairs by relation."""

    entities: list[str]
    index: dict[str, int]
    splits: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)

    @classmethod
    def read(cls, directory: Path) -> Graph:
        """Read facts, train, valid and test (those present); ValueError with the located errors."""
        diags = Diagnostics()
        raw = {s: read_triples(directory / f"{s}.txt", diags) for s in SPLITS if (directory / f"{s}.txt").exists()}
        if diags:
            raise ValueError(diags.render())
        names = sorted({e for rows in raw.values() for h, _, t in rows for e in (h, t)})
        index = {e: i for i, e in enumerate(names)}
        graph = cls(names, index)
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


def rule_pairs(graph: Graph, rules: list[Rule], target_ident: str, names: dict[str, str]) -> list[sparse.csr_matrix]:
    """Each learned rule's derived (head, tail) pairs on facts + train, by the crisp evaluator; ``names``
    maps the graph's relation names to the sketch's identifiers."""
    db = {
        names[r]: {(graph.entities[h], graph.entities[t]) for h, t in graph.pairs(r, ("facts", "train"))}
        for r in graph.relations
    }
    out = []
    for rule in rules:
        alone = Rule("derived__", rule.head_args, rule.body)
        model = evaluate({k: set(v) for k, v in db.items()}, [alone])
        pairs = {
            (graph.index[h], graph.index[t])
            for h, t in model.get("derived__", ())
            if h in graph.index and t in graph.index
        }
        out.append(graph.matrix(pairs))
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
