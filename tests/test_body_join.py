"""Sparse joins of a knowledge-graph clause's body give exactly the pairs the crisp evaluator derives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from nlndl.body_join import body_pairs
from nlndl.compiler.crisp import BodyAtom, Rule, evaluate
from nlndl.kg_rules import closure, pair_matrix

N = 5
RELATIONS = ("p", "q", "s")
pairs = st.sets(st.tuples(st.integers(0, N - 1), st.integers(0, N - 1)), max_size=12)
atoms = st.tuples(st.sampled_from(RELATIONS), st.sampled_from("ABC"), st.sampled_from("ABC"))


def _rule(body: list[tuple[str, str, str]]) -> Rule:
    atoms_ = tuple(BodyAtom(p, (("v", u), ("v", v))) for p, u, v in body)
    return Rule("r", (("v", "A"), ("v", "B")), atoms_)


def _as_set(m: sparse.csr_matrix) -> set[tuple[int, int]]:
    h, t = m.nonzero()
    return set(zip(h.tolist(), t.tolist(), strict=True))


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({r: pairs for r in RELATIONS}), st.lists(atoms, min_size=1, max_size=4))
def test_a_body_of_three_variables_joins_to_the_crisp_evaluators_pairs(db, body):
    rule = _rule(body)
    names = {v for _, u, v in body} | {u for _, u, _ in body}
    joined = body_pairs(rule, lambda p: pair_matrix(db[p], N), N)
    if not {"A", "B"} <= names:
        assert joined is None  # a head variable the body does not bind: not a clause to join
        return
    expected = evaluate({p: set(db[p]) for p in RELATIONS}, [rule]).get("r", set())
    assert joined is not None and _as_set(joined) == expected


def test_shapes_outside_three_variables_are_left_to_the_crisp_evaluator():
    four = Rule(
        "r",
        (("v", "A"), ("v", "B")),
        (BodyAtom("p", (("v", "A"), ("v", "C"))), BodyAtom("q", (("v", "D"), ("v", "B")))),
    )
    constant = Rule(
        "r", (("v", "A"), ("v", "B")), (BodyAtom("p", (("v", "A"), ("c", 3))), BodyAtom("q", (("v", "A"), ("v", "B"))))
    )
    negated = Rule("r", (("v", "A"), ("v", "B")), (BodyAtom("p", (("v", "A"), ("v", "B")), negated=True),))
    empty = pair_matrix(set(), N)
    assert all(body_pairs(rule, lambda _: empty, N) is None for rule in (four, constant, negated))


@settings(max_examples=100, deadline=None)
@given(
    st.fixed_dictionaries({r: pairs for r in RELATIONS}),
    st.lists(st.lists(atoms, min_size=1, max_size=3), min_size=1, max_size=3),
)
def test_a_closure_through_joined_bodies_is_the_least_model(db, bodies):
    rules = []
    for body in bodies:
        names = {v for _, u, v in body} | {u for _, u, _ in body}
        if {"A", "B"} <= names:  # safe rules only; a rule may read r itself (recursion)
            rules.append(_rule([("r" if i == 0 and p == "s" else p, u, v) for i, (p, u, v) in enumerate(body)]))
    if not rules:
        return
    start = {p: set(db[p]) for p in RELATIONS} | {"r": set()}
    assert closure(start, rules, N)["r"] == evaluate(start, rules).get("r", set())
