"""Rules with a constant (nlndl.constants) against a brute-force enumeration of every such rule on small graphs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import sparse

from nlndl.constants import DANGLING, MIN_CORRECT, UNSEEN, Bodies, ConstantRules, listing, text
from nlndl.ranking import TOP

N = 9


def random_graph(seed: int) -> dict[str, sparse.csr_matrix]:
    rng = np.random.default_rng(seed)
    out = {}
    for name, density in (("r", 0.25), ("s", 0.15), ("t", 0.3)):
        dense = (rng.random((N, N)) < density).astype(np.float32)
        out[name] = sparse.csr_matrix(dense)
    return out


def holds(graph: dict[str, sparse.csr_matrix], relation: str, back: bool, x: int, d: int | None) -> bool:
    """Body s(X, d) (or s(d, X) read backwards), or s(X, _) where d is None, for X = x."""
    m = graph[relation].toarray()
    line = m[:, x] if back else m[x, :]
    return bool(line.any()) if d is None else bool(line[d])


def brute_rules(graph: dict[str, sparse.csr_matrix], target: str) -> dict[tuple, float]:
    """Every kept rule as (side, relation, back, d or None, c) -> confidence, counted one grounding at a time."""
    known = graph[target].toarray()
    rules = {}
    for side in ("tails", "heads"):
        pairs = known if side == "tails" else known.T  # X -> c
        for relation, back in itertools.product(sorted(graph), (False, True)):
            for d in [None, *range(N)]:
                body = [x for x in range(N) if holds(graph, relation, back, x, d)]
                if not body or (d is not None and not any(holds(graph, relation, back, x, d) for x in range(N))):
                    continue
                for c in range(N):
                    if d is not None and relation == target and back == (side == "heads") and d == c:
                        continue  # r(X, c) :- r(X, c) only restates the known triples
                    correct = sum(pairs[x, c] for x in body)
                    if correct >= MIN_CORRECT:
                        rules[(side, relation, back, d, c)] = correct / (len(body) + UNSEEN)
    return rules


def brute_scores(graph, target, rules, entity: int, tail_asked: bool) -> np.ndarray:
    """Per candidate, the best confidence of the rules deriving the pair it makes with ``entity``, a dangling
    rule's (d None) weighed by DANGLING."""
    out = np.zeros(N)
    for (side, relation, back, d, c), full in rules.items():
        conf = full * DANGLING if d is None else full
        for cand in range(N):
            head, tail = (entity, cand) if tail_asked else (cand, entity)
            x, constant = (head, tail) if side == "tails" else (tail, head)
            if constant == c and holds(graph, relation, back, x, d):
                out[cand] = max(out[cand], conf)
    return out


def mined_rules(bodies: Bodies, mined: ConstantRules) -> dict[tuple, float]:
    out = {}
    for (side, body, c, closed), _, _, conf in listing(mined, 10**9):
        atom = int(bodies.closed_atom[body]) if closed else body
        relation, back = bodies.atoms[atom]
        d = int(bodies.closed_constant[body]) if closed else None
        out[(side, relation, back, d, c)] = conf
    return out


@pytest.mark.parametrize("seed", range(6))
def test_rules_and_scores_match_brute_force(seed: int) -> None:
    graph = random_graph(seed)
    bodies = Bodies.of(graph)
    mined = ConstantRules.mine(bodies, "r", graph["r"])
    expected = brute_rules(graph, "r")
    got = mined_rules(bodies, mined)
    assert got.keys() == expected.keys()
    for key, conf in expected.items():
        assert got[key] == pytest.approx(conf)
    assert mined.count() == len(expected)
    scorer = mined.scorer(bodies)
    for entity, tail_asked in itertools.product(range(N), (True, False)):
        want = brute_scores(graph, "r", expected, entity, tail_asked)
        np.testing.assert_allclose(scorer(entity, tail_asked), want)
        candidates, top, log_miss = scorer.reduced(entity, tail_asked)
        for cand in range(N):
            why = scorer.explain(entity, tail_asked, cand)
            assert (why[0][1] if why else 0.0) == pytest.approx(want[cand])
            assert [c for _, c in why] == sorted((c for _, c in why), reverse=True)
            confidences = [c for _, c in why]  # every rule deriving cand: its best TOP, and the noisy-or of all
            (at,) = np.flatnonzero(candidates == cand) if confidences else (None,)
            best = (confidences + [0.0] * TOP)[:TOP]
            np.testing.assert_allclose(top[at] if confidences else best, best)
            if confidences:
                assert log_miss[at] == pytest.approx(sum(np.log1p(-c) for c in confidences))


def test_listing_is_best_first_and_limited() -> None:
    graph = random_graph(1)
    bodies = Bodies.of(graph)
    mined = ConstantRules.mine(bodies, "r", graph["r"])
    rows = listing(mined, 5)
    assert len(rows) == min(5, mined.count())
    confs = [conf for *_, conf in rows]
    assert confs == sorted(confs, reverse=True)
    for _, predicted, correct, conf in rows:
        assert conf == pytest.approx(correct / (predicted + UNSEEN))


def test_rule_text_in_both_syntaxes() -> None:
    graph = {"r": sparse.csr_matrix(np.eye(3, dtype=np.float32)), "s": sparse.csr_matrix(np.ones((3, 3), np.float32))}
    bodies = Bodies.of(graph)
    names = ["a", 'b"', "c"]
    closed = next(k for k in range(bodies.closed_atom.size) if bodies.atoms[bodies.closed_atom[k]] == ("s", True))
    d = names[int(bodies.closed_constant[closed])]
    assert text(bodies, "r", ("tails", closed, 0, True), names, arrow=" <= ") == f"r(X,a) <= s({d},X)"
    written = text(bodies, "r", ("heads", bodies.atoms.index(("s", False)), 1, False), names)
    assert written == 'r("b\\"",Y) :- s(Y,_)'
    names[1] = "b\\"  # a backslash is escaped as rules.dl escapes it
    assert text(bodies, "r", ("heads", bodies.atoms.index(("s", False)), 1, False), names) == 'r("b\\\\",Y) :- s(Y,_)'
