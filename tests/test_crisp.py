"""The crisp evaluator equals clingo's model: on the bundled sketches and on random programs."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlndl.compiler.check import check
from nlndl.compiler.crisp import BodyAtom, Rule, evaluate
from nlndl.compiler.diagnostics import Diagnostics
from nlndl.compiler.ground import world_parts, world_program
from nlndl.compiler.parser import parse_file, parse_text
from nlndl.compiler.symbols import SymbolTable
from nlndl.datalog import clingo_program as render_clingo
from nlndl.engines import clingo_model

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = sorted((ROOT / "examples").rglob("*.dl"))
BACKGROUND = """
.decl edge(a: symbol, b: symbol)
.decl node(a: symbol)
.decl path(a: symbol, b: symbol)
.decl unreachable(a: symbol, b: symbol)
.decl sink(a: symbol)
edge("a","b"). edge("b","c"). edge("c","a"). edge("c","d"). node("e").
node(X) :- edge(X, _).
node(Y) :- edge(_, Y).
path(X, Y) :- edge(X, Y).
path(X, Z) :- path(X, Y), edge(Y, Z).
unreachable(X, Y) :- node(X), node(Y), !path(X, Y).
sink(X) :- node(X), !edge(X, _).
"""


def model_as_values(db, symbols):
    return {(name, tuple(symbols.value(c) for c in fact)) for name, rel in db.items() for fact in rel}


def crisp_and_clingo(sketch):
    """Per world: our least model and clingo's, of the same facts and background rules."""
    diags = Diagnostics()
    checked = check(sketch, diags)
    symbols = SymbolTable()
    for parts in world_parts(sketch):
        facts, rules = world_program(checked, parts, symbols, None, diags)
        assert not diags
        ours = model_as_values(evaluate(facts, rules), symbols)
        theirs = clingo_model(render_clingo(facts, rules, symbols))
        yield ours, theirs


@pytest.mark.parametrize("path", BUNDLED, ids=[str(p.relative_to(ROOT)) for p in BUNDLED])
def test_crisp_equals_clingo_on_bundled_sketches(path):
    for ours, theirs in crisp_and_clingo(parse_file(path)):
        assert ours == theirs


def test_crisp_equals_clingo_with_recursion_and_negation():
    sketch, diags = parse_text(BACKGROUND, "bg.dl")
    assert not diags
    for ours, theirs in crisp_and_clingo(sketch):
        assert ours == theirs
        assert ("sink", ("d",)) in ours and ("unreachable", ("d", "a")) in ours and ("path", ("a", "a")) in ours


V = st.sampled_from(["X", "Y", "Z"])


@st.composite
def random_program(draw):
    consts = range(4)
    facts = {
        "e": set(draw(st.lists(st.tuples(st.sampled_from(consts), st.sampled_from(consts)), max_size=8))),
        "u": set(draw(st.lists(st.tuples(st.sampled_from(consts)), max_size=3))),
    }
    rules = []
    for head in ("p", "q"):
        for _ in range(draw(st.integers(1, 2))):
            preds = ["e", "u", "p"] + (["q"] if head == "q" else [])
            body = []
            for _ in range(draw(st.integers(1, 3))):
                pred = draw(st.sampled_from(preds))
                body.append(BodyAtom(pred, tuple(("v", draw(V)) for _ in range(1 if pred == "u" else 2))))
            bound = {a[1] for atom in body for a in atom.args}
            if head == "q" and draw(st.booleans()):  # stratified negation: q may negate p
                body.append(BodyAtom("p", (("v", draw(st.sampled_from(sorted(bound)))),) * 2, negated=True))
            head_args = tuple(("v", draw(st.sampled_from(sorted(bound)))) for _ in range(2))
            rules.append(Rule(head, head_args, tuple(body)))
    return facts, rules


@settings(max_examples=80, deadline=None)
@given(random_program())
def test_crisp_equals_clingo_on_random_programs(case):
    facts, rules = case
    symbols = SymbolTable()
    for c in range(4):
        symbols.intern(f"c{c}")
    ours = model_as_values(evaluate(facts, rules), symbols)
    theirs = clingo_model(render_clingo(facts, rules, symbols))
    assert {a for a in ours if a[0] in ("p", "q")} == {a for a in theirs if a[0] in ("p", "q")}


def test_unrelated_body_atoms_are_conditions_not_a_cross_product():
    """sort(A, B) :- r(A, B), r(C, D), r(E, F), r(G, H): the last three components have no head variable, so
    they are checked once each (30^6 bindings would not finish), and the model equals clingo's."""
    symbols = SymbolTable()
    ids = [symbols.intern(f"c{i}") for i in range(30)]
    facts = {"r": {(a, b) for a in ids for b in ids if (a + b) % 3 == 0}, "s": set()}
    var = lambda name: ("v", name)  # noqa: E731
    body = tuple(BodyAtom("r", (var(x), var(y))) for x, y in ("AB", "CD", "EF", "GH"))
    rules = [Rule("s", (var("A"), var("B")), body)]
    ours = model_as_values(evaluate(facts, rules), symbols)
    theirs = clingo_model(render_clingo(facts, rules, symbols))
    assert {a for a in ours if a[0] == "s"} == {a for a in theirs if a[0] == "s"} != set()


def count_matches(monkeypatch) -> list[int]:
    """A counter of the facts the crisp evaluator tries against a body atom."""
    import nlndl.compiler.crisp as crisp

    calls = [0]
    match = crisp._match

    def counted(*args):
        calls[0] += 1
        return match(*args)

    monkeypatch.setattr(crisp, "_match", counted)
    return calls


def test_a_body_is_joined_from_its_bound_side_with_the_fewest_facts(monkeypatch):
    """country(A, B) :- contains(B, C), contains(C, A) asked at cities A: from A's one container C, not from
    the 2,000 places a country B contains; the same atoms derived either way."""
    from nlndl.compiler.crisp import derived_at

    var = lambda name: ("v", name)  # noqa: E731
    cities = range(1, 2001)
    facts = {"contains": {(0, c) for c in cities} | {(c, 10_000 + c) for c in cities}}
    rule = Rule("country", (var("A"), var("B")), (BodyAtom("contains", (var("B"), var("C"))),
                BodyAtom("contains", (var("C"), var("A")))))  # fmt: skip
    asked = {("country", (10_000 + c, 0)) for c in cities} | {("country", (10_000 + c, 1)) for c in cities}
    calls = count_matches(monkeypatch)
    found = derived_at(facts, [rule], asked)
    assert found == {("country", (10_000 + c, 0)) for c in cities}
    assert calls[0] < 20 * len(asked), calls[0]


def test_a_head_pair_joined_by_many_paths_is_found_once(monkeypatch):
    """r(A, B) :- e(A, C), f(C, B) with 500 paths from 0 to 0: once A and B are bound the rest is a test, which
    its first completion passes."""
    var = lambda name: ("v", name)  # noqa: E731
    facts = {"e": {(0, c) for c in range(1, 501)}, "f": {(c, 0) for c in range(1, 501)}}
    rule = Rule("r", (var("A"), var("B")), (BodyAtom("e", (var("A"), var("C"))), BodyAtom("f", (var("C"), var("B")))))
    from nlndl.compiler.crisp import derived_at

    calls = count_matches(monkeypatch)
    assert derived_at(facts, [rule], {("r", (0, 0))}) == {("r", (0, 0))}
    assert calls[0] < 20, calls[0]
    assert derived_at(facts, [rule], {("r", (0, 1))}) == set()  # every path tried, none ends at 1
    assert evaluate(facts, [rule])["r"] == {(0, 0)}
