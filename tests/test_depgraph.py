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
    assert program.learned["p"].negated == ("e", "m")
    assert program.learned["q"].negated == ()
    negative = {(src, dst) for src, dst, negated in program.dependencies if negated}
    assert negative == {("e", "p"), ("m", "p")}
    assert {"p", "q"} <= set(program.recursive)
