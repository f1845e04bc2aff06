"""Rule weights fitted on held-out triples (nlndl.rule_weights): unfitted, they rank as top-aggregation of the
counted rules does; fitted, they put first the rule that the data ranks first where two rules compete."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy import sparse
from typer.testing import CliRunner

from nlndl import paths, rule_weights
from nlndl.cli import app
from nlndl.constants import ConstantRules
from nlndl.kg_rules import Graph
from nlndl.ranking import Aggregate, popularity, ranks_of


def write_graph(root: Path, train: list[tuple[str, str, str]], test: list[tuple[str, str, str]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("valid", test[:1]), ("test", test)):
        (root / f"{name}.txt").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in rows))
    return root


def random_graph(root: Path, seed: int) -> Path:
    """A graph of three relations over 40 entities, r partly following p and q."""
    rng = np.random.default_rng(seed)
    triples = set()
    for _ in range(120):
        a, b, c = (f"e{x}" for x in rng.integers(0, 40, 3))
        triples.add((a, "p", b))
        triples.add((b, "q", c))
        if rng.random() < 0.6:
            triples.add((a, "r", c))
        if rng.random() < 0.3:
            triples.add((a, "r", b))
    rows = sorted(triples)
    test = [t for t in rows if t[1] == "r"][::4]
    return write_graph(root, [t for t in rows if t not in test], test)


def weighed(
    graph: Graph, target: str, asked: np.ndarray, keys: rule_weights.Keys, weights: np.ndarray
) -> rule_weights.Weighed:
    """The rules of the whole graph, with ``weights``, for ranking the ``asked`` pairs."""
    matrices = graph.known_matrices()
    over = rule_weights.RuleSet.over(keys, graph.bodies(), target, matrices[target], asked[:, 0], asked[:, 1])
    out = rule_weights.Weighed(over, weights, matrices[target])
    for rule in paths.each(matrices, target, 3, 0):
        out.take((rule.atoms, rule.reflexive), rule.rows, rule.columns, rule.confidence)
    return out


def test_unfitted_weights_rank_as_top_aggregation_of_the_counted_rules(tmp_path: Path) -> None:
    for seed in range(3):
        graph = Graph.read(random_graph(tmp_path / str(seed), seed))
        n, target = len(graph.entities), "r"
        test = sorted(graph.pairs(target, ("test",)))
        asked = np.array(test, dtype=np.int64)
        known = graph.pairs(target, ("train", "valid", "test"))
        prior = popularity(graph.relation_matrix(target))
        counted = Aggregate((n, n), asked[:, 0], asked[:, 1])
        for rule in paths.each(graph.known_matrices(), target, 3, 0):
            counted.add_entries(rule.rows, rule.columns, rule.confidence)
        constants = ConstantRules.mine(graph.bodies(), target, graph.relation_matrix(target))
        expected = ranks_of([(counted, "top", True)], test, known, prior, constants.scorer(graph.bodies()).reduced)[0]
        got = rule_weights.ranked(weighed(graph, target, asked, rule_weights.Keys(), np.zeros(0)), test, known, prior)
        assert np.allclose(got, expected), seed


def competing(root: Path) -> Path:
    """r follows p for 60 heads where p alone derives a tail and q for 40 heads where p and q both do (p wrong
    there); q alone derives a wrong tail for 40 more. Counted, p (0.6) outranks q (0.5) where both derive."""
    train, test = [], []
    for i in range(60):
        train += [(f"a{i}", "p", f"x{i}"), (f"a{i}", "r", f"x{i}")]
    for i in range(40):
        train += [(f"b{i}", "p", f"y{i}"), (f"b{i}", "q", f"z{i}")]
        (test if i % 4 == 0 else train).append((f"b{i}", "r", f"z{i}"))
    for i in range(40):
        train.append((f"c{i}", "q", f"w{i}"))
    train.append(("w0", "s", "x0"))  # every entity in train
    return write_graph(root, train, test)


def test_fitted_weights_put_first_the_rule_the_held_out_triples_rank_first(tmp_path: Path) -> None:
    graph = Graph.read(competing(tmp_path / "g"))
    target = "r"
    test = sorted(graph.pairs(target, ("test",)))
    asked = np.array(test, dtype=np.int64)
    known = graph.pairs(target, ("train", "valid", "test"))
    prior = popularity(graph.relation_matrix(target))
    keys, weights = rule_weights.fitted(graph.known_matrices(), target, 2, 0)
    assert weights.size == len(keys) and np.any(weights != 0)
    counted = rule_weights.ranked(weighed(graph, target, asked, keys, np.zeros(0)), test, known, prior)
    fitted = rule_weights.ranked(weighed(graph, target, asked, keys, weights), test, known, prior)
    # asked r(b, ?): counted, p's wrong tail first; fitted, q's right one
    assert np.all(counted[0::2] == 2.0)
    assert np.all(fitted[0::2] == 1.0)
    p_rule = keys.index[("path", ((("p", False),), False))]
    q_rule = keys.index[("path", ((("q", False),), False))]
    assert weights[q_rule] > weights[p_rule]


def test_fitted_weights_are_the_same_from_the_same_seed(tmp_path: Path) -> None:
    graph = Graph.read(competing(tmp_path / "g"))
    first = rule_weights.fitted(graph.known_matrices(), "r", 2, 3)[1]
    again = rule_weights.fitted(graph.known_matrices(), "r", 2, 3)[1]
    assert np.array_equal(first, again)


def test_too_few_held_out_triples_fit_no_weight() -> None:
    known = sparse.csr_matrix((np.ones(5, np.float32), (np.arange(5), np.arange(1, 6))), shape=(8, 8))
    keys, weights = rule_weights.fitted({"r": known}, "r", 2, 0)
    assert weights.size == 0 and len(keys) == 0


def test_bench_kg_reports_the_fitted_ranking_beside_counted_top(tmp_path: Path) -> None:
    data = competing(tmp_path / "g")
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        app, ["bench", "kg", str(data), "--baseline-only", "--fit-weights", "-q", "--record", str(out)]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["counted_fitted"]["mrr"] > report["counted_top"]["mrr"]
    assert "weights fitted on held-out triples" in result.output
    row = next(r for r in report["relations"] if r["relation"] == "r")
    assert row["baseline"]["fitted"]["queries"] == row["baseline"]["counted_top"]["queries"]
