"""The grid form of the fuzzy columns (nlndl.runtime.grid) gives the gather's values and gradients."""

from pathlib import Path
from unittest.mock import patch

import torch

from nlndl.compiler import compile_sketch
from nlndl.runtime import grid as grid_module
from nlndl.runtime.chain import ChainConfig, ForwardChainer

ROOT = Path(__file__).resolve().parents[1]

# q reads the learned p, negated too (p does not depend on q), over repeated variables (q(A, A, B) reads a
# diagonal), in two worlds of different sizes
NEGATED = """
.decl e(a: symbol, b: symbol)
.decl p(a: symbol, b: symbol)
.decl q(a: symbol, b: symbol)
.learn p(vars=3, terms=2, body=[e])
.learn q(vars=3, terms=3, negation, prune=none)
.world one {
  e("a","b"). e("b","c"). e("c","d"). e("d","a"). e("b","d").
  .pos p("a","c"). .neg p("a","b"). .pos q("a","d"). .neg q("a","a").
}
.world two {
  e("x","y"). e("y","z").
  .pos p("x","z"). .neg q("x","z").
}
"""


def grids_of(model: ForwardChainer) -> dict[tuple[int, str], object]:
    return {(i, p): getattr(w, f"grid_{p}") for i, w in enumerate(model.worlds) for p in model.order}


def test_grid_equals_gather(tmp_path):
    path = tmp_path / "negated.dl"
    path.write_text(NEGATED)
    program = compile_sketch(path)
    torch.manual_seed(5)
    with patch.object(grid_module, "GRID_SHARE", float("inf")), patch.object(grid_module, "MIN_GATHER_WORK", 0):
        model = ForwardChainer(program, ChainConfig(restarts=3)).double()
    for world in model.worlds:
        world.valuation = world.valuation.double()
    grids = grids_of(model)
    assert grids[0, "q"] is not None and grids[1, "q"] is not None and grids[0, "p"] is None  # p reads no learned atom
    assert any(len(set(a)) < len(a) for g in grids[0, "q"].groups for a in g.arguments)
    inputs = program.learned["q"].inputs
    negated_p = len(inputs) + next(i for i, a in enumerate(inputs) if a.predicate == "p")
    with torch.no_grad():  # a selected negated learned atom, so that the negated fuzzy columns carry weight
        model.functions["q"].inner[..., negated_p] = 2.0
    results = []
    for use in (True, False):
        for (i, p), g in grids.items():
            setattr(model.worlds[i], f"grid_{p}", g if use else None)
        losses = model.losses()
        grads = torch.autograd.grad(losses.sum(), list(model.parameters()))
        values = torch.cat([model.run(w) for w in model.worlds], dim=-1)
        results.append((losses, grads, values, model.crisp_wrong(0.5)))
    (a, grads_a, values_a, wrong_a), (b, grads_b, values_b, wrong_b) = results
    assert torch.allclose(a, b, atol=1e-12) and torch.allclose(values_a, values_b, atol=1e-12)
    for ga, gb in zip(grads_a, grads_b, strict=True):
        assert torch.allclose(ga, gb, atol=1e-12)
    assert torch.equal(wrong_a, wrong_b)


def test_grid_is_chosen_where_it_pays():
    """Addition's 59 learned atoms over 6,640 substitutions: the grid; Less than's few: the gather."""
    for sketch, expected in (("addition", True), ("less_than", False)):
        program = compile_sketch(ROOT / "examples/ilp" / sketch / "sketch.dl")
        model = ForwardChainer(program, ChainConfig(restarts=2))
        assert all((g is not None) == expected for g in grids_of(model).values())
