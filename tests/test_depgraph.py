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
