"""Dependency graphs: strongly connected components, strata order, recursion, negation cycles."""

from pathlib import Path

from nlndl.compiler import compile_sketch
from nlndl.compiler.depgraph import build_graph, stratify

ROOT = Path(__file__).resolve().parents[1]


def test_strata_follow_dependencies():
    edges = [("edge", "path", False), ("path", "path", False), ("path", "far", True), ("node", "far", False)]
    strata = stratify(build_graph(edges, ["edge", "path", "far", "node"]))
    assert strata.order == (("edge",), ("node",), ("path",), ("far",))
    assert strata.recursive == {"path"}
    assert strata.negative_cycles == ()


def test_mutual_recursion_is_one_component():
    edges = [("zero", "even", False), ("odd", "even", False), ("even", "odd", False), ("succ", "odd", False)]
    strata = stratify(build_graph(edges, ["zero", "succ", "even", "odd"]))
    assert ("even", "odd") in strata.order and strata.recursive == {"even", "odd"}


def test_negation_inside_a_component_is_reported():
    strata = stratify(build_graph([("a", "b", True), ("b", "a", False)], ["a", "b"]))
    assert strata.negative_cycles == (("a", "b"),)


def test_learned_predicates_depend_on_their_body():
    program = compile_sketch(ROOT / "examples/ilp/grandparent/sketch.dl")
    assert program.strata == [["father"], ["mother"], ["grandparent"]]
    assert program.recursive == []
    assert program.steps == 1
    lt = compile_sketch(ROOT / "examples/ilp/less_than/sketch.dl")
    assert lt.recursive == ["lt"] and lt.strata[-1] == ["lt"]


def test_learned_negation_leaves_out_the_predicates_that_depend_on_it(tmp_path):
    # p may read every relation (q and itself included); q reads p, so p negating q or itself would not be
    # stratified: p's negated candidates are e and m only, and the program compiles
    path = tmp_path / "s.dl"
    path.write_text(
        ".decl e(a: symbol, b: symbol)\n.decl m(a: symbol)\n.decl p(a: symbol, b: symbol)\n.decl q(a: symbol)\n"
        'e("x","y"). m("x").\n.learn p(vars=2, negation)\n.learn q(vars=2, body=[e, p])\n'
        '.pos p("x","y"). .pos q("x").\n'
    )
    program = compile_sketch(path)
    assert program.learned["p"].negated == ("e", "m", "e[0]", "e[1]"), "and e(X, _), e(_, X)"
    assert program.learned["q"].negated == ()
    negative = {(src, dst) for src, dst, negated in program.dependencies if negated}
    assert negative == {("e", "p"), ("m", "p"), ("e[0]", "p"), ("e[1]", "p")}
    assert {"p", "q"} <= set(program.recursive)


REACH = (
    ".decl edge(x: symbol, y: symbol)\n.decl node(x: symbol)\n.decl reach(x: symbol, y: symbol)\n"
    '.decl unreach(x: symbol, y: symbol)\nedge("a","b"). edge("b","c"). edge("d","e").\n'
    'node("a"). node("b"). node("c"). node("d"). node("e").\n{learns}\n.closed reach\n.closed unreach\n'
    '.pos reach("a","b"). .pos reach("b","c"). .pos reach("a","c"). .pos reach("d","e").\n'
    + "".join(
        f'.pos unreach("{x}","{y}"). '
        for x in "abcde"
        for y in "abcde"
        if (x, y) not in {("a", "b"), ("b", "c"), ("a", "c"), ("d", "e")}
    )
    + "\n"
)


EDGE_NODE = ("edge", "node", "edge[0]", "edge[1]")  # edge's projections: edge(X, _) and edge(_, X)


def test_a_default_body_leaves_out_the_learned_predicates_that_negate(tmp_path):
    """reach's default body (every relation) would read unreach, making the two one recursive component that
    unreach may not negate; without negation of its own, reach leaves the negating unreach out, so unreach may
    negate reach. A body= says otherwise, and a predicate with negation reads every relation."""
    path = tmp_path / "s.dl"
    path.write_text(REACH.format(learns=".learn reach(vars=3)\n.learn unreach(vars=2, negation)"))
    program = compile_sketch(path)
    assert _read(program, "reach") == {"edge", "node", "reach"}
    assert _read(program, "unreach") == {"edge", "node", "reach", "unreach", "edge[0]", "edge[1]"}
    assert program.learned["unreach"].negated == ("edge", "node", "reach", "edge[0]", "edge[1]")
    path.write_text(REACH.format(learns=".learn reach(vars=3, body=[edge, reach, unreach])\n.learn unreach(negation)"))
    program = compile_sketch(path)
    assert "unreach" in _read(program, "reach") and program.learned["unreach"].negated == EDGE_NODE
    path.write_text(REACH.format(learns=".learn reach(vars=3, negation)\n.learn unreach(vars=2, negation)"))
    program = compile_sketch(path)  # both negate: each reads the other, and neither negates the other
    assert program.learned["reach"].negated == EDGE_NODE
    assert program.learned["unreach"].negated == EDGE_NODE


def _read(program, predicate: str) -> set[str]:  # noqa: ANN001
    """The predicates of ``predicate``'s candidate atoms."""
    return {i.predicate for i in program.learned[predicate].inputs}


def test_the_complement_of_a_learned_closure_is_learned_with_default_bodies(tmp_path):
    from nlndl import api

    path = tmp_path / "s.dl"
    path.write_text(REACH.format(learns=".learn reach(vars=3)\n.learn unreach(vars=2, negation)"))
    result = api.train(path, seed=0, max_iters=600)
    assert result.solved, result.rule_texts()
    assert "unreach(A, B) :- node(A), node(B), !reach(A, B)." in result.rule_texts()
