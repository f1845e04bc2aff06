"""Knowledge-graph completion with rules: the path-rule baseline and the ranking of learned rules.

The baseline mines, for a target relation r, every rule r(X, Y) :- p(X, Y) and r(X, Y) :- p(X, Z), q(Z, Y)
over the graph's relations, each atom possibly inverted (p(Y, X)), on facts.txt + train.txt; a rule's
confidence is its support (known r pairs it derives) over its body count (pairs it derives). Learned
Datalog rules are scored the same way: each rule's derived pairs, by the crisp evaluator, with its
confidence on the same triples. Candidates are ranked by the noisy-or of the confidences of the rules that
derive them (nlndl.ranking), filtered, both directions, mean-rank ties.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from nlndl.compiler.triples import SPLITS
from nlndl.distributed import process_rank
from nlndl.errors import JobError
from nlndl.kg import KNOWN, MIN_SUPPORT, Graph, KGConfig, RelationRules, checked_relations, confidence, learn_graph
from nlndl.ranking import Metrics, metrics, noisy_or, ranks


def path_rules(graph: Graph, target: str) -> list[tuple[str, sparse.csr_matrix, float]]:
    """The baseline's rules for ``target``: (text, derived pairs, confidence), mined on facts + train."""
    known = graph.matrix(graph.pairs(target, KNOWN))
    atoms = []
    for p in graph.relations:
        a = graph.matrix(graph.pairs(p, KNOWN))
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


def tested_relations(graph: Graph, relations: list[str], directory: Path) -> list[str]:
    """Those of ``relations`` with test triples: the others have nothing to rank (JobError, before any work,
    when none has)."""
    tested = [r for r in relations if graph.splits["test"].get(r)]
    if not tested:
        raise JobError(
            f"{directory / 'test.txt'}: error: no test triples of {', '.join(repr(r) for r in relations[:5])}"
            f"{' ...' if len(relations) > 5 else ''}: nothing to rank"
        )
    return tested


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


def nlndl_side(graph: Graph, learned: RelationRules) -> tuple[dict[str, Any], np.ndarray]:
    """nlndl's row for one relation: MRR and Hits@k ranking by every clause read out (the ranks returned) and
    by the program alone, the program's rules with their confidence and their precision / recall on test."""
    target, n = learned.relation, len(graph.entities)
    test = sorted(graph.pairs(target, ("test",)))
    known = graph.pairs(target, SPLITS)
    found = ranks(learned.scores((n, n)), test, known)
    alone = ranks(learned.scores((n, n), clauses=False), test, known)
    own = learned.to_json()
    rules = [
        {"rule": text, "confidence": conf, **crisp_test(graph, target, [learned.pairs[rule]])}
        for text, conf, (rule, _) in zip(own.pop("rules"), own.pop("confidences"), learned.program, strict=True)
    ]
    row = {
        **metrics(found).to_json(),
        "program": {
            **metrics(alone).to_json(),
            **crisp_test(graph, target, [learned.pairs[r] for r, _ in learned.program]),
        },
        "rules": rules,
        "clauses_read": len(learned.result.clauses),
        **own,
    }
    return row, found


def run(
    directory: Path,
    relations: list[str] | None,
    config: KGConfig,
    learn: bool,
    progress: Callable[[str], None] | None = None,
    graph: Graph | None = None,
) -> dict[str, Any] | None:
    """Per relation the baseline's metrics and, with ``learn``, nlndl's; both over all relations (micro). Under
    torchrun the relations are learned by all processes and ranked on rank 0 (None on the others). ``graph``:
    the one in ``directory``, if already read."""
    started = time.perf_counter()
    graph = graph if graph is not None else Graph.read(directory, config.memory_limit)
    every = checked_relations(graph, relations, directory)
    chosen = tested_relations(graph, every, directory)
    learned: dict[str, RelationRules] = {}
    if learn:
        tell = (lambda i, count, r, done: progress(r) if done is not None else None) if progress else None
        got = learn_graph(directory, graph, chosen, config, tell)
        if got is None:
            return None
        learned = {one.relation: one for one in got}
    rows, base_all, nln_all, alone_all = [], [], [], []
    n = len(graph.entities)
    for target in chosen:
        if progress and not learn:
            progress(target)
        start = time.perf_counter()
        mined = path_rules(graph, target)
        test = sorted(graph.pairs(target, ("test",)))
        base = ranks(noisy_or([(p, c) for _, p, c in mined], (n, n)), test, graph.pairs(target, SPLITS))
        row: dict[str, Any] = {"relation": target, "test": len(test), "baseline": metrics(base).to_json()}
        row["baseline"]["seconds"] = round(time.perf_counter() - start, 2)
        row["baseline"]["rules"] = len(mined)
        base_all.append(base)
        if learn:
            own, found = nlndl_side(graph, learned[target])
            row["nlndl"] = own
            nln_all.append(found)
            alone_all.append(own["program"])
        rows.append(row)
    rows += [{"relation": r, "test": 0, "note": "no test triples"} for r in every if r not in chosen]
    out = {"data": directory.name, "relations": rows, "baseline": metrics(np.concatenate(base_all)).to_json()}
    out["processes"] = process_rank(config.device).size
    out["seconds"] = round(time.perf_counter() - started, 1)
    if learn:
        out["nlndl"] = metrics(np.concatenate(nln_all)).to_json()
        weights = [r["queries"] for r in alone_all]
        out["nlndl_program"] = {
            k: float(np.average([r[k] for r in alone_all], weights=weights))
            for k in ("mrr", "hits@1", "hits@3", "hits@10")
        }
        out["config"] = asdict(config)
    return out


def markdown(report: dict[str, Any]) -> str:
    """Per relation and over all: MRR and Hits@k of the baseline and (if run) nlndl's clauses, its program's
    MRR, and the program's rules with confidence and test precision / recall."""
    learn = "nlndl" in report
    head = "| relation | test | baseline MRR | H@1 | H@10 |" + (
        " nlndl MRR | H@1 | H@10 | program MRR | s | rules (confidence, test precision / recall) |" if learn else ""
    )
    lines = [head, "|---" * (head.count("|") - 1) + "|"]

    def cells(m: dict[str, Any]) -> list[str]:
        return [f"{m['mrr']:.3f}", f"{m['hits@1']:.3f}", f"{m['hits@10']:.3f}"]

    for row in report["relations"]:
        if not row["test"]:
            width = head.count("|") - 3
            lines.append("| " + " | ".join([row["relation"], "0", "no test triples", *[""] * (width - 1)]) + " |")
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
    return "\n".join(lines)
