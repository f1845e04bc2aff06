"""The sparse forward-chaining runtime equals the dense reference, values and gradients."""

from pathlib import Path
from unittest.mock import patch

import pytest
import torch
from dense_reference import dense_run
from hypothesis import given, settings
from hypothesis import strategies as st

from nlndl.compiler import CompileError, compile_sketch
from nlndl.defaults import CLASS_WEIGHTS
from nlndl.runtime import grid, sparse_crisp, worlds
from nlndl.runtime.chain import ChainConfig, ChainStep, ForwardChainer
from nlndl.runtime.config import RESTART_TIERS, amalgamations, auto_restarts
from nlndl.runtime.fused import log_none
from nlndl.runtime.init import Init
from nlndl.runtime.nln import Variants
from nlndl.runtime.scatter import log_not


def random_sketch(draw) -> str:
    n = draw(st.integers(2, 3))
    consts = [f"c{i}" for i in range(n)]
    edges = draw(st.lists(st.tuples(st.sampled_from(consts), st.sampled_from(consts)), min_size=1, max_size=5))
    marks = draw(st.lists(st.sampled_from(consts), max_size=2))
    form = draw(st.sampled_from(["dnf", "cnf"]))
    # with negation and the default body, p's own negated atoms keep membership 0 (not stratifiable)
    negation = draw(st.sampled_from(["", ", negation, body=[e, m]", ", negation"]))
    lines = [".decl e(a: symbol, b: symbol)", ".decl m(a: symbol)", ".decl p(a: symbol, b: symbol)"]
    lines += [f'e("{a}","{b}").' for a, b in edges] + [f'm("{a}").' for a in marks]
    lines += [f'm("{c}") :- m("{c}").' for c in consts]
    lines += [f".learn p(vars=3, terms={draw(st.integers(1, 3))}, form={form}, prune=none{negation})"]
    lines += [f'.pos p("{edges[0][0]}","{edges[0][1]}").', f".steps {draw(st.integers(1, 3))}"]
    return "\n".join(lines) + "\n"


def observed(program) -> torch.Tensor:
    """World 0's atoms whose values training can see: all but the non-example atoms of a learned
    predicate that no learned predicate reads (the compiler keeps no substitution for those)."""
    world = program.worlds[0]
    read = {a.predicate for ir in program.learned.values() for a in ir.inputs}
    mask = torch.ones(world.atoms, dtype=torch.bool)
    for p in set(program.learned) - read:
        mask[world.layout[p].offset : world.layout[p].offset + world.layout[p].size] = False
    mask[torch.from_numpy(world.example_slots)] = True
    return mask


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_sparse_equals_dense(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("chain") / "s.dl"
    path.write_text(random_sketch(data.draw))
    program = compile_sketch(path)
    torch.manual_seed(data.draw(st.integers(0, 1000)))
    amalgamation = data.draw(st.sampled_from([None, "replace", "or", "max"]))
    config = ChainConfig(
        restarts=2,
        inner_init=Init("normal", std=1.0),
        outer_init=Init("normal", std=1.0),
        amalgamation=amalgamation,
        fuzzy=data.draw(st.sampled_from(["power", "product"])),
    )
    # the crisp first level on distinct rows (every time) or on every substitution (never); the fuzzy
    # columns read from the substitution grid (every time it applies) or gathered (never)
    grid_share = data.draw(st.sampled_from([0.0, float("inf")]))
    with (
        patch.object(worlds, "DISTINCT_ROWS_SHARE", data.draw(st.sampled_from([0.0, 1.0]))),
        patch.object(grid, "GRID_SHARE", grid_share),
        patch.object(grid, "MIN_GATHER_WORK", 0),
    ):
        model = ForwardChainer(program, config).double()
    for world in model.worlds:
        world.valuation = world.valuation.double()
    slots = model.worlds[0].slots  # a run's valuation: the learned atoms (and any slot a fuzzy column reads)
    seen = observed(program)[slots]
    sparse = model.run(model.worlds[0])[:, seen]
    dense = dense_run(model)[:, slots[seen]]
    assert torch.allclose(sparse, dense.to(sparse.dtype), atol=1e-10)
    weights = list(model.parameters())
    probe = torch.rand_like(sparse)
    grads_sparse = torch.autograd.grad((sparse * probe).sum(), weights)
    grads_dense = torch.autograd.grad((dense_run(model)[:, slots[seen]] * probe).sum(), weights)
    for a, b in zip(grads_sparse, grads_dense, strict=True):
        assert torch.allclose(a, b, atol=1e-9)


TWO_HOP = """
.decl e(a: symbol, b: symbol)
.decl p(a: symbol, b: symbol)
.decl q(a: symbol, b: symbol)
e("a","b"). e("b","c"). e("c","d"). e("d","e"). e("b","e").
.learn p(vars=3, terms=2, body=[e])
.learn q(vars=3, terms=2)
.pos p("a","c"). .pos p("b","d"). .neg p("a","b").
.pos q("a","d"). .neg q("a","a").
"""


def losses_and_gradients(model: ForwardChainer) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
    losses = model.losses()
    return losses, torch.autograd.grad(losses.sum(), list(model.parameters()))


def assert_same_run(a: tuple, b: tuple) -> None:
    """The same losses and gradients, to rounding."""
    assert torch.allclose(a[0], b[0], atol=1e-12)
    for ga, gb in zip(a[1], b[1], strict=True):
        assert torch.allclose(ga, gb, atol=1e-12)


def test_distinct_crisp_rows_change_nothing_but_the_work(tmp_path):
    """A predicate with no learned candidate atoms (p) runs F_p once per distinct row of extensional
    values and spreads it to the substitutions; q, which reads p, keeps every row; losses and gradients
    are those of the run over every substitution."""
    path = tmp_path / "two_hop.dl"
    path.write_text(TWO_HOP)
    program = compile_sketch(path)
    results = []
    for share in (1.0, 0.0):  # deduplicate every time / never
        torch.manual_seed(3)
        with patch.object(worlds, "DISTINCT_ROWS_SHARE", share):
            model = ForwardChainer(program, ChainConfig(restarts=3)).double()
        for world in model.worlds:
            world.valuation = world.valuation.double()
        world = model.worlds[0]
        rows = {p: getattr(world, f"crisp_rows_{p}") for p in ("p", "q")}
        factors = {p: getattr(world, f"crisp_{p}") for p in ("p", "q")}
        assert not len(model.functions["p"].fuzzy_columns) and len(model.functions["q"].fuzzy_columns)
        assert rows["q"] is None
        if share:
            assert rows["p"] is not None and factors["p"].shape[0] < rows["p"].shape[0]
        else:
            assert rows["p"] is None
        results.append(losses_and_gradients(model))
    assert_same_run(*results)


SPARSE_FORMS = """
.decl e(a: symbol, b: symbol)
.decl f(a: symbol)
.decl p(a: symbol, b: symbol)
.decl q(a: symbol, b: symbol)
e("a","b"). e("b","c"). e("c","d"). e("d","e"). e("b","e"). f("b"). f("d").
.learn p(vars=3, terms=2, body=[e, f]{p_options})
.learn q(vars=3, terms=2, body=[e, p])
.pos p("a","c"). .pos p("b","d"). .neg p("a","b"). .neg p("c","c").
.pos q("a","d"). .neg q("a","a").
"""


@pytest.mark.parametrize("options", ["", ", negation", ", form=cnf", ", form=cnf, negation"])
def test_sparse_crisp_columns_give_the_dense_product(tmp_path, options):
    """Crisp columns held sparse (x itself, not 1 - x) give the dense product's losses and gradients, for a
    DNF and a CNF, with and without negated columns; the predicate that reads learned atoms too (q) agrees."""
    path = tmp_path / "forms.dl"
    path.write_text(SPARSE_FORMS.format(p_options=options))
    program = compile_sketch(path)
    results = []
    for sparse in (False, True):
        torch.manual_seed(5)
        work = 0 if sparse else 10**18
        with patch.object(sparse_crisp, "MIN_DENSE_WORK", work), patch.object(sparse_crisp, "SPARSE_SHARE", 1.0):
            model = ForwardChainer(program, ChainConfig(restarts=3)).double()
        for world in model.worlds:
            world.valuation = world.valuation.double()
        held = [world.crisp(p)[0] for world in model.worlds for p in ("p", "q")]
        assert all(isinstance(h, sparse_crisp.SparseCrisp) == sparse for h in held)
        results.append(losses_and_gradients(model))
    assert_same_run(*results)


def test_sparse_crisp_is_chosen_where_few_columns_hold_and_the_product_is_large():
    """Held sparse only past MIN_DENSE_WORK multiply-adds and at most SPARSE_SHARE ones in x (1 - factors for
    a DNF), read from the plain columns alone when negated ones sit beside them."""
    x = torch.zeros(1000, 100)
    x[torch.arange(1000), torch.arange(1000) % 100] = 1.0  # 1% ones
    slots = sparse_crisp.MIN_DENSE_WORK // x.numel() + 1
    assert isinstance(sparse_crisp.sparse_crisp(1.0 - x, "dnf", False, slots), sparse_crisp.SparseCrisp)
    assert isinstance(sparse_crisp.sparse_crisp(x, "cnf", False, slots), sparse_crisp.SparseCrisp)
    assert sparse_crisp.sparse_crisp(x, "dnf", False, slots) is None  # 1 - x: 99% ones
    assert sparse_crisp.sparse_crisp(1.0 - x, "dnf", False, slots // 2) is None  # too small to pay
    negated = torch.cat([1.0 - x, x], dim=1)  # DNF factors with negation: [1 - x, x]
    held = sparse_crisp.sparse_crisp(negated, "dnf", True, slots)
    assert held is not None and held.shape == (1000, 100) and int(held.x_col.numel()) == 1000


def test_class_weights_of_the_loss():
    """Each class weighting is the cross-entropy it names: positives weigh N/P (balanced), sqrt(N/P), 1."""
    program = compile_sketch(Path(__file__).resolve().parents[1] / "examples/ilp/less_than/sketch.dl")
    for weight in CLASS_WEIGHTS:
        torch.manual_seed(0)
        model = ForwardChainer(program, ChainConfig(restarts=3, class_weight=weight)).double()
        for world in model.worlds:
            world.valuation = world.valuation.double()
        with torch.no_grad():
            loss = model.objective()[0]
            values = torch.cat([model.run(w)[:, w.example_slots] for w in model.worlds], dim=-1)
        labels = torch.cat([w.example_labels for w in model.worlds]).double()
        bce = -(labels * values.log() + (1 - labels) * (1 - values).log())
        positive = labels > 0.5
        p, n = int(positive.sum()), int((~positive).sum())
        assert 0 < p < n
        w = {"balanced": n / p, "sqrt": (n / p) ** 0.5, "none": 1.0}[weight]
        expected = (w * bce[:, positive].sum(-1) + bce[:, ~positive].sum(-1)) / (w * p + n)
        torch.testing.assert_close(loss, expected)
    with pytest.raises(ValueError, match="class weight"):
        ChainConfig(class_weight="inverse")


def test_restarts_are_independent(tmp_path):
    path = Path(__file__).resolve().parents[1] / "examples/ilp/connectedness/sketch.dl"
    model = ForwardChainer(compile_sketch(path), ChainConfig(restarts=3))
    losses = model.losses()
    (grad,) = torch.autograd.grad(losses[1], [model.functions["connected"].inner])
    assert grad[1].abs().sum() > 0 and grad[0].abs().sum() == 0 and grad[2].abs().sum() == 0


def test_default_restarts_follow_the_work_of_a_forward_pass():
    """No restarts asked for: more draws for a small program than for a large one; asked for: exactly those."""
    root = Path(__file__).resolve().parents[1] / "examples/ilp"
    small = compile_sketch(root / "connectedness/sketch.dl")
    large = compile_sketch(root / "addition/sketch.dl")
    assert small.summary()["index_entries"] * small.steps <= RESTART_TIERS[0][0]
    assert ForwardChainer(small).restarts == auto_restarts(small) == RESTART_TIERS[0][1]
    assert auto_restarts(large) < auto_restarts(small)
    assert ForwardChainer(small, ChainConfig(restarts=3)).restarts == 3


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_crisp_runs_any_as_the_float_or_rounds(tmp_path_factory, data):
    """A crisp program's run (threshold set: memberships and valuations 0 or 1) reads a DNF's OR as an any over
    its terms and substitutions; it gives what the float OR rounded at 0.5 gives, every restart and variant."""
    path = tmp_path_factory.mktemp("crisp") / "s.dl"
    path.write_text(random_sketch(data.draw))
    program = compile_sketch(path)
    torch.manual_seed(data.draw(st.integers(0, 1000)))
    config = ChainConfig(
        restarts=4,
        inner_init=Init("normal", std=2.0),
        outer_init=Init("normal", std=2.0),
        amalgamation=data.draw(st.sampled_from([None, "replace", "or", "max"])),
        fuzzy=data.draw(st.sampled_from(["power", "product"])),
    )
    grid_share = data.draw(st.sampled_from([0.0, float("inf")]))
    with patch.object(grid, "GRID_SHARE", grid_share), patch.object(grid, "MIN_GATHER_WORK", 0):
        model = ForwardChainer(program, config)
    terms = model.functions["p"].inner.shape[1]
    keep = torch.tensor(
        data.draw(
            st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=terms, max_size=terms), min_size=3, max_size=3)
        )
    )
    variants = Variants(torch.tensor([0, 1, 3]), {"p": keep})
    original = ChainStep.forward
    for v in (None, variants):
        fast = model.run(model.worlds[0], threshold=0.5, variants=v)
        with patch.object(ChainStep, "forward", lambda self, *args: original(self, *args[:6])):
            rounded = model.run(model.worlds[0], threshold=0.5, variants=v)
        assert torch.equal(fast, rounded)


def test_power_and_product_forms_agree_on_crisp_valuations():
    """The power form differs from the paper's product only on fuzzy inputs: with memberships at 0/1 the
    learned valuations are crisp at every step (up to the LOG_FLOOR cap on memberships), and both forms give
    the same valuations."""
    path = Path(__file__).resolve().parents[1] / "examples/ilp/less_than/sketch.dl"
    program = compile_sketch(path)
    valuations = []
    for form in ("power", "product"):
        torch.manual_seed(0)
        model = ForwardChainer(program, ChainConfig(restarts=3, fuzzy=form))
        with torch.no_grad():
            for function in model.functions.values():
                function.inner.copy_(torch.where(function.inner > -1.0, 20.0, -20.0))
                function.outer.copy_(torch.where(function.outer > -1.0, 20.0, -20.0))
            valuations.append(model.run(model.worlds[0]))
    assert torch.allclose(valuations[0], valuations[1], atol=1e-4)
    assert ((valuations[0] < 1e-4) | (valuations[0] > 1 - 1e-4)).all()


@pytest.mark.parametrize("cap", [False, True])
def test_log_none_matches_torch_ops(cap):
    """The hand-written backward of the fused DNF disjunction agrees with autograd through torch ops,
    including terms capped at exponent 0 and products saturated at the OR's cap."""
    generator = torch.Generator().manual_seed(1)
    exponent = -3.0 * torch.rand(3, 50, 4, generator=generator, dtype=torch.float64)
    exponent[0, :5] = 0.0  # true terms: with scale 1 they saturate
    exponent[1, :5] = 1e-7  # rounding above 0
    scale = torch.rand(3, 4, generator=generator, dtype=torch.float64)
    scale[0] = 1.0
    exponent.requires_grad_(True)
    scale.requires_grad_(True)
    probe = torch.rand(3, 50, generator=generator, dtype=torch.float64)

    def reference(e, w):
        e = e.clamp(max=0.0) if cap else e
        return log_not(torch.exp(e) * w.unsqueeze(1)).sum(-1)

    got, want = log_none(exponent, scale, cap), reference(exponent, scale)
    assert torch.allclose(got, want, atol=1e-12)
    for a, b in zip(
        torch.autograd.grad((got * probe).sum(), (exponent, scale)),
        torch.autograd.grad((want * probe).sum(), (exponent, scale)),
        strict=True,
    ):
        assert torch.allclose(a, b, atol=1e-12)
    assert torch.autograd.gradcheck(
        lambda e, w: log_none(e, w, cap), (exponent.detach()[2:].requires_grad_(), scale.detach()[2:].requires_grad_())
    )


def test_negated_atoms_of_dependent_predicates_keep_membership_zero(tmp_path):
    path = tmp_path / "s.dl"
    path.write_text(
        ".decl e(a: symbol, b: symbol)\n.decl p(a: symbol, b: symbol)\n"
        'e("x","y"). e("y","z").\n.learn p(vars=3, negation)\n.pos p("x","z").\n'
    )
    program = compile_sketch(path)
    ir = program.learned["p"]
    model = ForwardChainer(program, ChainConfig(restarts=3))
    function = model.functions["p"]
    n = len(ir.inputs)
    banned = torch.tensor([n + i for i, a in enumerate(ir.inputs) if a.predicate == "p"])
    allowed = torch.tensor([n + i for i, a in enumerate(ir.inputs) if a.predicate == "e"])
    assert len(banned) and len(allowed)
    inner, _ = function.memberships()
    assert (inner[..., banned] == 0).all() and (inner[..., allowed] > 0).all()
    crisp, _ = function.memberships(threshold=0.5)
    assert (crisp[..., banned] == 0).all()
    with torch.no_grad():  # even a weight that would select !p(...) reads as 0
        function.inner[..., banned] = 20.0
    model.losses().sum().backward()
    assert (function.inner.grad[..., banned] == 0).all() and function.inner.grad[..., allowed].abs().sum() > 0
    assert (function.memberships(threshold=0.5)[0][..., banned] == 0).all()


STRATIFIED = """
.decl e(a: symbol, b: symbol)
.decl node(a: symbol)
.decl reach(a: symbol, b: symbol)
.decl shortcut(a: symbol)
.decl lonely(a: symbol)
node("a"). node("b"). node("c"). node("d").
e("a","b"). e("b","c"). e("c","d").
.learn reach(vars=3, terms=2, body=[e, reach], amalgamation=or)
.learn shortcut(vars=3, terms=1, body=[e, reach], negation)
.learn lonely(vars=2, terms=1, body=[node, shortcut])
.pos reach("a","d"). .neg reach("d","a").
.pos shortcut("d"). .neg shortcut("a").
.pos lonely("d"). .neg lonely("b").
.steps 4
"""
# reach(A, B) :- e(A, B).  reach(A, B) :- e(A, C), reach(C, B).  shortcut(A) :- e(A, B), e(B, C), not reach(A, C).
CLAUSES = {
    "reach": [[(("e", (0, 1)), False)], [(("e", (0, 2)), False), (("reach", (2, 1)), False)]],
    "shortcut": [[(("e", (0, 1)), False), (("e", (1, 2)), False), (("reach", (0, 2)), True)]],
}


def test_amalgamation_or_keeps_the_crisp_meaning_where_the_sketch_may_ask_for_it(tmp_path):
    """A predicate whose valuation only grows from step to step (reach, definite) may merge by ``or``, as
    the sketch asks: its crisp program derives what it derives under ``replace``, while the fuzzy values
    differ. shortcut, which negates reach, may not: shortcut(a) holds after the first step, while reach(a, c)
    is not yet derived, and no longer after the second, and ``or`` would keep it."""
    path = tmp_path / "stratified.dl"
    path.write_text(STRATIFIED)
    program = compile_sketch(path)
    assert amalgamations(program, None) == {"reach": "or", "shortcut": "replace", "lonely": "replace"}
    assert amalgamations(program, "max") == {"reach": "max", "shortcut": "max", "lonely": "max"}
    crisp, fuzzy = {}, {}
    for setting in (None, "replace", "or"):
        torch.manual_seed(5)
        model = ForwardChainer(program, ChainConfig(restarts=2, amalgamation=setting))
        with torch.no_grad():
            for p, clauses in CLAUSES.items():
                function = model.functions[p]
                inputs = {(a.predicate, a.vars): i for i, a in enumerate(function.ir.inputs)}
                function.inner.fill_(-20.0)
                function.outer.fill_(-20.0)
                for t, clause in enumerate(clauses):
                    function.outer[:, t] = 20.0
                    for atom, negated in clause:
                        function.inner[:, t, inputs[atom] + negated * len(inputs)] = 20.0
            function = model.functions["reach"]
            function.inner[1] += torch.randn_like(function.inner[1])  # restart 1: fuzzy memberships
        world = model.worlds[0]
        crisp[setting], fuzzy[setting] = model.run(world, threshold=0.5), model.run(world)
    shortcut = slice(world.ranges["shortcut"][0], sum(world.ranges["shortcut"]))
    assert crisp["replace"][0, shortcut].sum() == 0 and crisp["or"][0, shortcut].sum() == 2  # a and b
    assert torch.equal(crisp[None], crisp["replace"])
    assert not torch.allclose(fuzzy[None][1], fuzzy["replace"][1])


@pytest.mark.parametrize(
    ("learn", "why"),
    [
        (".learn shortcut(vars=3, terms=1, body=[e, reach], negation, amalgamation=or)", "negates the learned reach"),
        (".learn lonely(vars=2, terms=1, body=[node, shortcut], amalgamation=max)", "reads shortcut, which can"),
    ],
)
def test_amalgamation_that_keeps_atoms_is_refused_where_atoms_can_be_lost(tmp_path, learn, why):
    predicate = learn.split()[1].split("(")[0]
    lines = [line for line in STRATIFIED.splitlines() if not line.startswith(f".learn {predicate}(")]
    path = tmp_path / "s.dl"
    path.write_text("\n".join(lines + [learn]) + "\n")
    with pytest.raises(CompileError) as error:
        compile_sketch(path)
    text = str(error.value)
    line = len(lines) + 1
    column = learn.index("amalgamation") + 1
    assert f"s.dl:{line}:{column}: error: amalgamation=" in text and why in text and "use replace" in text


def test_recomputed_steps_give_the_same_losses_and_gradients():
    """ChainConfig(recompute=True) keeps one valuation per step and runs each step again in the backward
    pass: the same numbers, for less memory."""
    program = compile_sketch(Path(__file__).resolve().parents[1] / "examples/ilp/dilp/even_odd/sketch.dl")
    results = []
    for recompute in (False, True):
        torch.manual_seed(3)
        model = ForwardChainer(program, ChainConfig(restarts=3, recompute=recompute))
        losses, _, _ = model.objective()
        losses.sum().backward()
        results.append((losses.detach(), [p.grad.clone() for p in model.parameters()]))
    torch.testing.assert_close(results[0][0], results[1][0], rtol=0, atol=0)
    for a, b in zip(results[0][1], results[1][1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


DUPLICATE = """
.decl cons(h: symbol, t: symbol, l: symbol)
.decl dup(l: symbol)
cons("a","nil","a"). cons("b","nil","b"). cons("a","a","aa"). cons("a","b","ab"). cons("b","a","ba").
cons("b","aa","baa"). cons("a","ab","aab"). cons("b","ab","bab").
.learn dup(vars=4, terms=2, prune=none)
.pos dup("aa"). .pos dup("baa"). .pos dup("aab"). .neg dup("ab"). .neg dup("ba"). .neg dup("bab").
"""


def test_a_run_carries_the_learned_atoms_not_the_background(tmp_path):
    """The valuation a run updates step by step holds dup's atoms (and the false slot), not cons's cube over
    the constants; it runs as the dense reference over the whole valuation does."""
    path = tmp_path / "dup.dl"
    path.write_text(DUPLICATE)
    program = compile_sketch(path)
    world = program.worlds[0]
    torch.manual_seed(0)
    model = ForwardChainer(program, ChainConfig(restarts=2)).double()
    tensors = model.worlds[0]
    tensors.valuation = tensors.valuation.double()
    dup = world.layout["dup"]
    assert world.layout["cons"].size == 9**3  # a, b, nil, aa, ab, ba, baa, aab, bab
    assert dup.size <= tensors.valuation.numel() <= dup.size + 1
    assert torch.equal(tensors.slots[: dup.size], torch.arange(dup.offset, dup.offset + dup.size))
    values = model.run(tensors)
    dense = dense_run(model)[:, tensors.slots]
    assert torch.allclose(values, dense.to(values.dtype), atol=1e-10)


def test_the_safety_gate_asks_a_binding_atom_of_each_extra_variable(tmp_path):
    """Under pruning, an extra variable only a reflexive helper holds (same(C, C)) is outside the sound
    class, as pruning does not count that atom: the gate closes on such a clause and opens on a path."""
    path = tmp_path / "s.dl"
    path.write_text(
        ".decl e(a: symbol, b: symbol)\n.decl same(a: symbol, b: symbol)\n.decl p(a: symbol, b: symbol)\n"
        'e("x","y"). e("y","z").\nsame(X, X) :- e(X, _).\n.learn p(vars=3, negation)\n.pos p("x","z").\n'
    )
    program = compile_sketch(path)
    ir = program.learned["p"]
    gate = ForwardChainer(program, ChainConfig(restarts=1)).functions["p"].gate
    inputs = {(a.predicate, a.vars): i for i, a in enumerate(ir.inputs)}

    def opened(*atoms) -> float:
        inner = torch.zeros(1, 1, 2 * len(ir.inputs))
        for atom in atoms:
            inner[0, 0, inputs[atom]] = 1.0
        return float(gate(inner)[0, 0])

    assert opened(("e", (0, 2)), ("e", (2, 1)), ("same", (2, 2))) == 1.0
    assert opened(("e", (0, 1)), ("same", (2, 2))) == 0.0
    assert opened(("e", (0, 1)), ("e", (2, 2))) == 0.0
    assert opened(("e", (0, 1))) == 1.0


@pytest.mark.parametrize("width", [1, 5, 12, 63, 64])
def test_distinct_rows_are_torchs_distinct_rows_in_its_order(width):
    """0/1 rows deduplicated as integer keys give torch.unique(dim=0)'s rows, in its order, and its inverse;
    rows too wide for a key, or with other values, are deduplicated by torch.unique itself."""
    generator = torch.Generator().manual_seed(width)
    factors = torch.randint(0, 2, (4000, width), generator=generator).float()
    factors = factors[torch.randint(0, 50, (4000,), generator=generator)]  # few distinct rows: deduplicated
    unique, rows = worlds.distinct_rows(factors)
    expected, inverse = torch.unique(factors, dim=0, return_inverse=True)
    assert torch.equal(unique, expected) and torch.equal(rows, inverse) and unique.dtype == factors.dtype
    assert (worlds.row_keys(factors) is None) == (width > 63)
    halves = factors * 0.5
    assert worlds.row_keys(halves) is None and torch.equal(worlds.distinct_rows(halves)[0], expected * 0.5)
