"""Path rules decided at the asked atoms by sorted joins give what the evaluator's binding-by-binding join
gives, on random graphs and paths of one to three atoms read either way."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import nlndl.compiler.crisp as crisp
import nlndl.compiler.path_join as path_join
from nlndl.compiler.crisp import BodyAtom, Rule, derived_at
from nlndl.compiler.path_join import PathJoin, conjunction_of, path_of


def atom(predicate: str, *names: str, negated: bool = False) -> BodyAtom:
    return BodyAtom(predicate, tuple(("v", n) for n in names), negated)


XY = (("v", "X"), ("v", "Y"))


def evaluated_alone(facts: dict, rules: list[Rule], asked: set) -> set:
    """derived_at with neither sorted join: every rule solved binding by binding by the evaluator."""
    originals = crisp.path_of, crisp.conjunction_of
    crisp.path_of = crisp.conjunction_of = lambda head_args, body: None
    try:
        return derived_at(facts, rules, asked)
    finally:
        crisp.path_of, crisp.conjunction_of = originals


def test_a_path_is_read_in_order_whatever_the_order_of_its_atoms():
    body = (atom("s", "Y", "B"), atom("p", "X", "A"), atom("q", "B", "A"))
    assert path_of(XY, body) == [("p", False), ("q", True), ("s", True)]
    assert path_of(XY, (atom("p", "Y", "X"),)) == [("p", True)]


def test_what_is_not_a_path_is_left_to_the_evaluator():
    for head, body in [
        (XY, (atom("p", "X", "A"), atom("q", "X", "Y"))),  # A hangs off X
        (XY, (atom("p", "X", "A"), atom("q", "A", "X"))),  # back to X, never to Y
        (XY, (atom("p", "X", "Y"), atom("q", "Y", "A"))),  # past Y
        (XY, (atom("p", "X", "A"), atom("q", "A", "Y", negated=True))),
        (XY, (atom("p", "X", "X"), atom("q", "X", "Y"))),
        (XY, (atom("p", "X", "_"), atom("q", "X", "Y"))),
        (XY, (BodyAtom("p", (("v", "X"), ("c", 3))), atom("q", "X", "Y"))),
        (XY, (BodyAtom("p", (("v", "X"), ("v", "A"), ("v", "Y"))),)),
        ((("v", "X"), ("v", "X")), (atom("p", "X", "A"), atom("q", "A", "X"))),
        ((("v", "X"), ("c", 1)), (atom("p", "X", "A"),)),
    ]:
        assert path_of(head, body) is None, body


@st.composite
def paths(draw):
    size = draw(st.integers(1, 9))
    entity = st.integers(0, size - 1)
    facts = {p: set(draw(st.lists(st.tuples(entity, entity), max_size=25))) for p in ("p", "q", "s")}
    if draw(st.booleans()):
        del facts["q"]  # a relation with no facts at all
    length = draw(st.integers(1, 3))
    names = ["X", *(f"A{i}" for i in range(length - 1)), "Y"]
    body = []
    for i in range(length):
        a, b = names[i], names[i + 1]
        body.append(atom(draw(st.sampled_from(["p", "q", "s"])), *((b, a) if draw(st.booleans()) else (a, b))))
    body = draw(st.permutations(body))
    asked = {("r", pair) for pair in draw(st.lists(st.tuples(entity, entity), max_size=30))}
    facts["r"] = set(draw(st.lists(st.tuples(entity, entity), max_size=3)))
    return facts, [Rule("r", XY, tuple(body))], asked


@settings(max_examples=200, deadline=None, derandomize=True)
@given(paths())
def test_joined_paths_derive_what_the_evaluator_derives(case):
    facts, rules, asked = case
    assert path_of(rules[0].head_args, rules[0].body) is not None
    assert derived_at(facts, rules, asked) == evaluated_alone(facts, rules, asked)


def test_walks_past_the_bound_are_left_to_the_evaluator(monkeypatch):
    facts = {"p": {(0, 1), (0, 2)}, "q": {(1, 3), (2, 4)}, "r": set()}
    steps = [("p", False), ("q", False)]
    asked = np.array([[0, 3], [0, 5], [1, 3]], dtype=np.int64)
    assert PathJoin(facts).derived(steps, asked).tolist() == [True, False, False]
    monkeypatch.setattr(path_join, "MAX_WALKS", 1)
    assert PathJoin(facts).derived(steps, asked) is None
    rule = Rule("r", XY, (atom("p", "X", "A"), atom("q", "A", "Y")))
    assert derived_at(facts, [rule], {("r", (0, 3)), ("r", (0, 5))}) == {("r", (0, 3))}


def test_what_is_no_conjunction_over_the_head_is_left_to_the_evaluator():
    for head, body in [
        (XY, (atom("p", "X", "A"), atom("q", "A", "Y", negated=True))),
        (XY, (atom("p", "X", "_"), atom("q", "X", "Y"))),
        (XY, (BodyAtom("p", (("v", "X"), ("c", 3))), atom("q", "X", "Y"))),
        (XY, (BodyAtom("p", (("v", "X"), ("v", "A"), ("v", "Y"))),)),
        (XY, (atom("p", "X", "Y"), atom("q", "A", "B"))),  # a condition apart from the head
        ((("v", "X"), ("v", "X")), (atom("p", "X", "A"),)),
        ((("v", "X"), ("c", 1)), (atom("p", "X", "A"),)),
    ]:
        assert conjunction_of(head, body) is None, body
    assert conjunction_of(XY, (atom("p", "X", "Y"), atom("q", "A", "A"), atom("s", "Y", "A"))) is not None


@st.composite
def conjunctions(draw):
    """Bodies of one to four binary atoms over X, Y, A and B, each joined to the head's variables."""
    size = draw(st.integers(1, 7))
    entity = st.integers(0, size - 1)
    facts = {p: set(draw(st.lists(st.tuples(entity, entity), max_size=20))) for p in ("p", "q", "s")}
    if draw(st.booleans()):
        del facts["s"]  # a relation with no facts at all
    names = st.sampled_from(["X", "Y", "A", "B"])
    body, reached = [], {"X", "Y"}
    for _ in range(draw(st.integers(1, 4))):
        first = draw(st.sampled_from(sorted(reached)))
        second = draw(names)
        reached.add(second)
        pair = (second, first) if draw(st.booleans()) else (first, second)
        body.append(atom(draw(st.sampled_from(["p", "q", "s"])), *pair))
    body = draw(st.permutations(body))
    asked = {("r", pair) for pair in draw(st.lists(st.tuples(entity, entity), max_size=30))}
    facts["r"] = set()
    return facts, [Rule("r", XY, tuple(body))], asked


@settings(max_examples=300, deadline=None, derandomize=True)
@given(conjunctions())
def test_joined_conjunctions_derive_what_the_evaluator_derives(case):
    facts, rules, asked = case
    assert conjunction_of(rules[0].head_args, rules[0].body) is not None
    assert derived_at(facts, rules, asked) == evaluated_alone(facts, rules, asked)


def test_bindings_past_the_bound_are_left_to_the_evaluator(monkeypatch):
    facts = {"p": {(0, 1), (0, 2)}, "q": {(1, 3), (2, 3)}, "r": set()}
    body = (atom("p", "X", "A"), atom("q", "A", "Y"), atom("p", "X", "Y"))
    asked = np.array([[0, 3], [0, 1], [1, 3]], dtype=np.int64)
    assert PathJoin(facts).conjunction(XY, body, asked).tolist() == [False, False, False]
    facts["p"].add((0, 3))
    assert PathJoin(facts).conjunction(XY, body, asked).tolist() == [True, False, False]
    monkeypatch.setattr(path_join, "MAX_WALKS", 1)
    assert PathJoin(facts).conjunction(XY, body, asked) is None
    assert derived_at(facts, [Rule("r", XY, body)], {("r", (0, 3)), ("r", (0, 1))}) == {("r", (0, 3))}
