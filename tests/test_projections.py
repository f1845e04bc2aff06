"""Negated atoms with an anonymous variable: a learned predicate with negation may say !edge(X, _)."""

from pathlib import Path

import clingo
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from nlndl.cli import app
from nlndl.compiler import compile_sketch
from nlndl.compiler.ir import InputAtom, projected, projection_of
from nlndl.rules import rules_from_text
from nlndl.runtime.chain import ChainConfig, ForwardChainer
from nlndl.runtime.predicate import PROJECTION_INIT
from nlndl.verify import checked_worlds, clingo_score, crisp_score, whole_facts, world_facts

runner = CliRunner()

PEOPLE = ["ann", "bob", "cal", "dee", "eve", "fay", "gus", "hal"]
PARENT = [("ann", "bob"), ("ann", "cal"), ("bob", "dee"), ("cal", "eve"), ("cal", "fay"), ("dee", "gus")]

CHILDLESS = (
    ".decl person(x: symbol)\n.decl parent(x: symbol, y: symbol)\n.decl childless(x: symbol)\n"
    + "".join(f'person("{p}").\n' for p in PEOPLE)
    + "".join(f'parent("{a}","{b}").\n' for a, b in PARENT)
    + ".learn childless(negation)\n.closed childless\n"
    + "".join(f'.pos childless("{p}").\n' for p in PEOPLE if p not in {a for a, _ in PARENT})
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.dl"
    path.write_text(text)
    return path


def test_projection_names_read_back():
    assert projected("edge", 1) == "edge[1]"
    assert projection_of("edge[1]") == ("edge", 1)
    assert projection_of("edge") is None


def test_a_predicate_with_negation_reads_the_projections_of_binary_relations_only_facts_define(tmp_path):
    text = (
        ".decl e(a: symbol, b: symbol)\n.decl r(a: symbol, b: symbol)\n.decl m(a: symbol)\n"
        '.decl p(a: symbol)\ne("x","y"). m("x").\nr(X, Y) :- e(Y, X).\n.learn p({options})\n.pos p("x").\n'
    )
    program = compile_sketch(write(tmp_path, text.format(options="negation")))
    ir = program.learned["p"]
    assert ir.negated == ("e", "r", "m", "e[0]", "e[1]"), "r is derived by a rule: none of its own"
    assert InputAtom("e[0]", (1,)) in ir.inputs and InputAtom("e[1]", (0,)) in ir.inputs
    summary = program.summary()
    assert summary["predicates"] == 4 and all("[" not in n for stratum in summary["strata"] for n in stratum)
    plain = compile_sketch(write(tmp_path, text.format(options="vars=2")))
    assert not any(projection_of(a.predicate) for a in plain.learned["p"].inputs), "without negation: none"


def test_childless_is_learned_and_written_with_an_anonymous_variable(tmp_path):
    sketch = write(tmp_path, CHILDLESS)
    out = tmp_path / "out"
    trained = runner.invoke(app, ["train", str(sketch), "-D", str(out), "-q"])
    assert trained.exit_code == 0, trained.output
    assert "childless(A) :- person(A), !parent(A, _)." in (out / "childless.dl").read_text()
    assert "not parent(A, _)" in (out / "childless.lp").read_text()
    written = [p.name for p in (out / "childless.main.facts").iterdir()]
    assert sorted(written) == ["parent.facts", "person.facts"], "no facts of a projection"
    control = clingo.Control()
    control.load(str(out / "childless.lp"))
    control.load(str(out / "childless.main.facts.lp"))
    control.ground([("base", [])])
    derived = []
    control.solve(on_model=lambda m: derived.extend(str(s) for s in m.symbols(shown=True)))
    assert sorted(derived) == sorted(f'childless("{p}")' for p in ["eve", "fay", "gus", "hal"])
    checked = runner.invoke(app, ["check", str(out / "childless.dl"), str(sketch)])
    assert checked.exit_code == 0, checked.output


def test_a_projection_starts_near_off_is_never_positive_and_leaves_the_other_draws_alone(tmp_path):
    """childless with parent given by facts reads parent[0] and parent[1]; with parent derived by a rule from
    the same facts it has the same candidate atoms but those two. The same seed draws the same memberships for
    the atoms both have, the projections' negated columns start at PROJECTION_INIT, the positive ones at 0."""
    given = CHILDLESS.replace(
        ".learn childless(negation)", ".learn childless(negation, body=[person, parent, childless])"
    )
    with_them = compile_sketch(write(tmp_path, given))
    ruled = given.replace(".decl parent(", ".decl given(").replace('parent("', 'given("')
    ruled = ruled.replace(
        ".decl childless", "parent(X, Y) :- given(X, Y).\n.decl parent(x: symbol, y: symbol)\n.decl childless"
    )
    without = compile_sketch(write(tmp_path, ruled))
    both = []
    for program in (with_them, without):
        torch.manual_seed(0)
        inner, _ = ForwardChainer(program, ChainConfig(restarts=3)).functions["childless"].memberships()
        both.append((program.learned["childless"], inner.detach()))
    (ir, inner), (ir0, inner0) = both
    n, n0 = len(ir.inputs), len(ir0.inputs)
    own = [ir.inputs.index(a) for a in ir0.inputs]
    assert own == list(range(n0)) and n == n0 + 4, "parent[0] and parent[1] of A and of B"
    columns = own + [n + i for i in own]
    assert torch.equal(inner[..., columns], inner0)
    projections = [i for i, a in enumerate(ir.inputs) if projection_of(a.predicate)]
    assert torch.all(inner[..., projections] == 0)
    assert torch.allclose(inner[..., [n + i for i in projections]], torch.tensor(PROJECTION_INIT))


@pytest.mark.parametrize("kind", ["sink", "isolated"])
def test_graph_nodes_without_edges_are_learned(kind, tmp_path):
    edges = [(0, 1), (1, 2), (2, 0), (3, 1), (4, 5)]
    nodes = range(8)
    out_nodes, in_nodes = {a for a, _ in edges}, {b for _, b in edges}
    want = [n for n in nodes if n not in out_nodes and (kind == "sink" or n not in in_nodes)]
    text = (
        f".decl node(x: number)\n.decl edge(x: number, y: number)\n.decl {kind}(x: number)\n"
        + "".join(f"node({n}).\n" for n in nodes)
        + "".join(f"edge({a},{b}).\n" for a, b in edges)
        + f".learn {kind}(negation)\n.closed {kind}\n"
        + "".join(f".pos {kind}({n}).\n" for n in want)
    )
    trained = runner.invoke(app, ["train", str(write(tmp_path, text)), "-D", str(tmp_path / "out"), "-q"])
    assert trained.exit_code == 0, trained.output
    assert "!edge(A, _)" in trained.output


def test_a_subgraph_projects_its_own_facts(tmp_path):
    """On a subgraph, parent(_, X) is read over the subgraph's facts, as the rules are checked there: a person
    whose parent the subgraph left out has no parent[1] atom."""
    program = compile_sketch(write(tmp_path, CHILDLESS), subgraph=2)  # keeps a child without its parent
    world = program.worlds[0]
    assert program.whole, "trained on a subgraph"
    true: dict[str, set] = {}
    for slot in np.flatnonzero(world.valuation[: world.atoms - 1] > 0):
        name, args = world.decode_slot(int(slot))
        true.setdefault(name, set()).add(args)
    assert true.get("parent[0]", set()) == {(a,) for a, _ in true.get("parent", set())}
    assert true.get("parent[1]", set()) == {(b,) for _, b in true.get("parent", set())}


@pytest.mark.parametrize("seed", range(1, 5))
def test_a_subgraph_leaves_unlabelled_the_atoms_over_constants_it_cut_off(tmp_path, seed):
    """A person whose children (or parent) the subgraph left out reads otherwise there than in the whole world
    (childless there, not in it): its childless atom is neither a positive nor one of the closed world's
    negatives on the subgraph, for training and for its checks alike; every other atom keeps its label."""
    program = compile_sketch(write(tmp_path, CHILDLESS), subgraph=5, seed=seed)
    world, whole = program.worlds[0], program.whole[0]
    facts = world_facts(program, world)["parent"]
    everywhere = whole_facts(whole)["parent"]
    kept = {c for slot in world.example_slots.tolist() for c in world.decode_slot(slot)[1]}
    kept |= {c for slot in world.unlabelled_slots.tolist() for c in world.decode_slot(slot)[1]}
    cut = {
        c
        for c in kept
        for position in (0, 1)
        if any(f[position] == c for f in everywhere) and not any(f[position] == c for f in facts)
    }
    unlabelled = {world.decode_slot(slot) for slot in world.unlabelled_slots.tolist()}
    assert cut and unlabelled == {("childless", (c,)) for c in cut}
    labelled = {world.decode_slot(slot) for slot in world.example_slots.tolist()}
    assert len(labelled) == len(kept - cut) and not labelled & unlabelled
    (checked,) = checked_worlds(program)
    assert checked.unknown == unlabelled


@pytest.mark.parametrize("seed", range(1, 5))
def test_the_rule_of_the_whole_world_fits_a_subgraph_that_cuts_children_off(tmp_path, seed):
    """On a subgraph of 5 of 8 people the rule that holds on the whole world makes no mistake, by nlndl's
    evaluator and by clingo: the people whose children the subgraph left out, childless there, are no
    closed-world negatives there (before, they were, and no rule could fit the subgraph)."""
    program = compile_sketch(write(tmp_path, CHILDLESS), subgraph=5, seed=seed)
    rules = rules_from_text("childless(A) :- person(A), !parent(A, _).\n", program, "rule")
    assert crisp_score(program, rules).solved and clingo_score(program, rules).solved
    assert clingo_score(program, rules, whole=True).solved
