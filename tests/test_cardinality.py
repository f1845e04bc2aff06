"""A rule's confidence by its candidate's class (nlndl.cardinality), and the aggregate that ranks by it
(nlndl.ranking.Classed), against counts made pair by pair."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from nlndl import cardinality
from nlndl.ranking import Classed, top_of


def matrix(pairs: list[tuple[int, int]], n: int) -> sparse.csr_matrix:
    rows, cols = zip(*pairs, strict=True) if pairs else ((), ())
    return sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))


def other_held(known: set, x: int, y: int, side: int) -> int:
    """The known pairs a candidate holds in its role besides (x, y): tail y's other heads (side 0, asked
    r(x, ?)), or head x's other tails (side 1, asked r(?, y))."""
    if side == 0:
        return sum(1 for h, t in known if t == y and (h, t) != (x, y))
    return sum(1 for h, t in known if h == x and (h, t) != (x, y))


def by_hand(pairs: set, known: set, overall: float | None = None) -> np.ndarray:
    """Per direction and class: each derived pair's candidate classed by :func:`other_held`, then correct over
    derived with SHRINK pairs at ``overall`` (the rule's correct over predicted unless given), at most
    ``overall``."""
    overall = len(pairs & known) / len(pairs) if overall is None else overall
    out = np.zeros((2, cardinality.CLASSES))
    for side in (0, 1):
        hits, derived = np.zeros(cardinality.CLASSES), np.zeros(cardinality.CLASSES)
        for x, y in pairs:
            c = min(other_held(known, x, y, side), cardinality.CLASSES - 1)
            derived[c] += 1
            hits[c] += (x, y) in known
        out[side] = np.minimum((hits + cardinality.SHRINK * overall) / (derived + cardinality.SHRINK), overall)
    return out


def test_a_rules_confidence_by_class_counted_by_hand():
    known = matrix([(0, 1), (2, 1), (3, 4)], 5)
    rule = matrix([(0, 1), (2, 1), (0, 4), (3, 1)], 5)
    got = cardinality.confidences(rule, known, cardinality.degrees(known))
    s = cardinality.SHRINK
    # the rule's one confidence: 2 of its 4 pairs are known; no class's is above it
    # tails: (0, 1) and (2, 1) each leave one other head of 1 (class 1, correct), (0, 4): 4 has one head (class 1,
    # wrong), (3, 1): 1 has two heads (class 2, wrong)
    assert got[0] == pytest.approx([0.5, min((2 + s / 2) / (3 + s), 0.5), (0 + s / 2) / (1 + s)])
    assert got[0, 2] < 0.5
    # heads: 0 and 2 hold no other tail when their known pair is left out (class 0, correct); (0, 4) and (3, 1):
    # 0 and 3 hold one tail (class 1, wrong)
    assert got[1] == pytest.approx([0.5, (0 + s / 2) / (2 + s), 0.5])
    assert got[1, 1] < 0.5


pairs_of = st.sets(st.tuples(st.integers(0, 7), st.integers(0, 7)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(known=pairs_of, rule=pairs_of)
def test_confidences_by_class_match_the_pairs_counted_one_by_one(known, rule):
    k = matrix(sorted(known), 8)
    got = cardinality.confidences(matrix(sorted(rule), 8), k, cardinality.degrees(k))
    assert got == pytest.approx(by_hand(rule, known))
    assert got.max() <= len(rule & known) / len(rule) + 1e-12


@settings(max_examples=40, deadline=None)
@given(known=pairs_of, rules=st.lists(pairs_of, min_size=1, max_size=4), entity=st.integers(0, 7))
def test_classed_ranks_each_candidate_by_its_class_in_the_direction_asked(known, rules, entity):
    k = matrix(sorted(known), 8)
    classed = Classed((8, 8), k)
    expected = {True: ([], []), False: ([], [])}
    for i, rule in enumerate(rules):
        confidence = (i + 1) / 10  # the rule's one confidence, which each class's shrinks towards
        classed.add(matrix(sorted(rule), 8), confidence)
        table = by_hand(rule, known, confidence)
        for tail_asked, side in ((True, 0), (False, 1)):
            for x, y in rule:
                if (x if tail_asked else y) == entity:
                    candidate = y if tail_asked else x
                    # ranked as the graph holds it: a known pair is filtered from the ranking anyway
                    held = sum(1 for h, t in known if (t == y if side == 0 else h == x))
                    expected[tail_asked][0].append(candidate)
                    expected[tail_asked][1].append(table[side, min(held, cardinality.CLASSES - 1)])
    for tail_asked in (True, False):
        candidates, confidences = expected[tail_asked]
        want = top_of(np.array(candidates, np.int64), np.array(confidences))
        got = classed.merged(entity, tail_asked)
        assert got[0].tolist() == want[0].tolist()
        assert np.allclose(got[1], want[1]) and np.allclose(got[2], want[2])
