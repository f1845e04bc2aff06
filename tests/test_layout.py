"""Sparse valuation layouts compute what dense ones do; sampled closed worlds train on K negatives per
positive and are still verified against the whole closed world."""

from pathlib import Path

import numpy as np
import pytest
import torch

from nlndl.compiler import CompileError, compile_sketch
from nlndl.compiler.crisp import BodyAtom, Rule
from nlndl.compiler.examples import sample_negatives
from nlndl.runtime.chain import ChainConfig, ForwardChainer
from nlndl.verify import clingo_score, crisp_score

ROOT = Path(__file__).resolve().parents[1]
SKETCHES = sorted((ROOT / "examples" / "ilp").rglob("sketch.dl"))


def example_values(program, seed: int = 0) -> tuple[list[torch.Tensor], torch.Tensor, list[torch.Tensor]]:
    """Each world's example values after the forward chaining, the losses, and the gradients, in float64."""
    torch.manual_seed(seed)
    model = ForwardChainer(program, ChainConfig(restarts=2)).double()
    for world in model.worlds:
        world.valuation = world.valuation.double()
    values = [model.run(w)[:, w.example_slots] for w in model.worlds]
    losses = model.objective()[0]
    losses.sum().backward()
    return [v.detach() for v in values], losses.detach(), [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("sketch", SKETCHES, ids=[str(s.parent.relative_to(ROOT / "examples")) for s in SKETCHES])
def test_sparse_layout_computes_what_the_dense_one_does(sketch):
    dense = compile_sketch(sketch, layout="dense")
    sparse = compile_sketch(sketch, layout="sparse")
    assert any(e.sparse for w in sparse.worlds for e in w.layout.values())
    assert sum(w.atoms for w in sparse.worlds) <= sum(w.atoms for w in dense.worlds)
    for d, s in zip(dense.worlds, sparse.worlds, strict=True):
        assert [d.decode_slot(int(x)) for x in d.example_slots] == [s.decode_slot(int(x)) for x in s.example_slots]
        np.testing.assert_array_equal(d.example_labels, s.example_labels)
        facts = lambda w: {w.decode_slot(int(x)) for x in np.flatnonzero(w.valuation[: w.atoms - 1] > 0)}  # noqa: E731
        assert facts(d) == facts(s)
    (dv, dl, dg), (sv, sl, sg) = example_values(dense), example_values(sparse)
    for a, b in zip(dv, sv, strict=True):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(dl, sl, atol=1e-9, rtol=1e-9)
    for a, b in zip(dg, sg, strict=True):
        torch.testing.assert_close(a, b, atol=1e-9, rtol=1e-9)


def test_a_sparse_layout_holds_the_facts_and_the_demanded_atoms_only(tmp_path):
    path = tmp_path / "s.dl"
    edges = [(i, i + 1) for i in range(30)]
    path.write_text(
        ".decl edge(a: number, b: number)\n.decl p(a: number, b: number)\n"
        + "".join(f"edge({a}, {b}).\n" for a, b in edges)
        + ".learn p(vars=3, body=[edge])\n.pos p(0, 2).\n.neg p(0, 1).\n"
    )
    program = compile_sketch(path, layout="sparse")
    world = program.worlds[0]
    assert world.layout["edge"].size == len(edges) and world.layout["p"].size == 2
    assert world.atoms == len(edges) + 2 + 1  # and the false slot
    assert world.layout["edge"].grid == 31 * 31
    assert sorted(world.decode_slot(int(s)) for s in world.example_slots) == [("p", (0, 1)), ("p", (0, 2))]


def closed_sketch(tmp_path: Path, option: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "c.dl"
    people = 40
    facts = "".join(f'parent("p{i // 2}", "p{i}").\n' for i in range(1, people))
    ancestors = {c: [] for c in range(people)}
    for c in range(1, people):
        ancestors[c] = [c // 2, *ancestors[c // 2]]
    positives = "".join(f'.pos ancestor("p{a}", "p{c}").\n' for c in range(people) for a in ancestors[c])
    path.write_text(
        ".decl parent(a: symbol, b: symbol)\n.decl ancestor(a: symbol, b: symbol)\n"
        f"{facts}.learn ancestor(vars=3, body=[parent, ancestor])\n.closed ancestor{option}\n{positives}"
    )
    return path


def test_sampled_closed_world_draws_k_negatives_per_positive_with_the_seed(tmp_path):
    path = closed_sketch(tmp_path, "(sample=2)")
    full = compile_sketch(closed_sketch(tmp_path / "full", ""))
    one, same, other = (compile_sketch(path, seed=s) for s in (1, 1, 2))
    labels = one.worlds[0].example_labels
    positives = int((labels > 0.5).sum())
    assert int((labels < 0.5).sum()) == 2 * positives
    np.testing.assert_array_equal(one.worlds[0].example_slots, same.worlds[0].example_slots)
    assert not np.array_equal(one.worlds[0].example_slots, other.worlds[0].example_slots)
    assert full.worlds[0].example_slots.size == 40 * 40
    assert one.closed == ["ancestor"]


def test_verification_of_a_sampled_closed_world_counts_every_false_positive(tmp_path):
    program = compile_sketch(closed_sketch(tmp_path, "(sample=1)"), seed=0)
    full = compile_sketch(closed_sketch(tmp_path / "full", ""))
    parent = lambda a, b: BodyAtom("parent", (("v", a), ("v", b)), False)  # noqa: E731
    ancestor = lambda a, b: BodyAtom("ancestor", (("v", a), ("v", b)), False)  # noqa: E731
    head = (("v", "A"), ("v", "B"))
    right = [
        Rule("ancestor", head, (parent("A", "B"),)),
        Rule("ancestor", head, (ancestor("A", "C"), ancestor("C", "B"))),
    ]
    too_much = [*right, Rule("ancestor", head, (parent("B", "A"),))]  # with the recursion, every pair
    for rules, solved in ((right, True), (too_much, False)):
        for score in (crisp_score(program, rules), clingo_score(program, rules)):
            exact = crisp_score(full, rules)
            assert score.solved is solved
            assert (score.false_positives, score.negatives) == (exact.false_positives, exact.negatives)
    wrong = crisp_score(program, too_much)  # with the recursive clause: every pair in the tree
    assert wrong.false_positives == wrong.negatives == 40 * 40 - wrong.positives
    assert int((program.worlds[0].example_labels < 0.5).sum()) == wrong.positives  # trained on one per positive


def test_sample_negatives_is_uniform_distinct_and_outside_the_taken():
    rng = np.random.default_rng(0)
    taken = np.array([1, 5, 7], dtype=np.int64)
    drawn = sample_negatives(1000, taken, 300, rng)
    assert drawn.size == 300 and np.unique(drawn).size == 300 and not np.isin(drawn, taken).any()
    assert 300 < drawn.mean() < 700
    assert np.array_equal(sample_negatives(10, taken, 100, rng), np.setdiff1d(np.arange(10), taken))
    dense = sample_negatives(20, taken, 15, rng)
    assert dense.size == 15 and not np.isin(dense, taken).any()


def test_closed_option_errors_are_located(tmp_path):
    path = tmp_path / "e.dl"
    path.write_text('.decl p(a: symbol)\n.learn p(vars=1)\n.pos p("a").\n.closed p(sample=0)\n.closed p(size=2)\n')
    with pytest.raises(CompileError) as info:
        compile_sketch(path)
    text = info.value.diagnostics.render()
    assert "e.dl:4:11: error: sample must be a whole number" in text
    assert "e.dl:5:11: error: unknown .closed option 'size'" in text


def test_a_closed_world_too_large_to_list_points_to_sampling(tmp_path):
    people = 2000
    (tmp_path / "parent.facts").write_text("".join(f"p{i // 2}\tp{i}\n" for i in range(1, people)))
    path = tmp_path / "big.dl"
    path.write_text(
        ".decl parent(a: symbol, b: symbol)\n.input parent\n.decl grandparent(a: symbol, b: symbol)\n"
        '.learn grandparent(vars=3, body=[parent])\n.closed grandparent\n.pos grandparent("p0", "p4").\n'
    )
    with pytest.raises(CompileError, match=r"sample the closed world \(\.closed p\(sample=K\)\)"):
        compile_sketch(path, memory_limit=32 * 2**20)
    path.write_text(path.read_text().replace(".closed grandparent", ".closed grandparent(sample=5)"))
    program = compile_sketch(path, memory_limit=32 * 2**20)
    world = program.worlds[0]
    assert world.layout["grandparent"].size == 6 and world.layout["parent"].size == people - 1
