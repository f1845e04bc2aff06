"""DNF/CNF networks, initialisation, binarisation and read-back as formulas."""

import itertools
import math

import numpy as np
import pytest
import torch

from nlndl.runtime import Init, NormalForm, Xor, xor_formula
from nlndl.runtime.formula import Formula, Literal


def truth_table(n: int) -> np.ndarray:
    return np.array(list(itertools.product([0, 1], repeat=n)), dtype=np.float32)


def test_init_strategies():
    w = torch.empty(50, 40)
    from nlndl.runtime.init import initialise

    initialise(w, Init("sparse", k=2, on=0.9, off=0.001), c=2.0)
    m = torch.sigmoid(2.0 * w)
    assert ((m > 0.5).sum(-1) == 2).all() and torch.allclose(m.max(), torch.tensor(0.9))
    initialise(w, Init("negative", k=1), c=1.0)
    assert 0.5 < (torch.sigmoid(w).sum(-1)).mean() < 2.5
    # the chainer's default: mean -1 on narrow terms, logit(k / fan_in) / c where that is lower
    narrow, wide = torch.empty(400, 10), torch.empty(400, 100)
    for weight in (narrow, wide):
        initialise(weight, Init("negative", k=2, mean=-1.0, std=2.0), c=2.0, generator=torch.Generator().manual_seed(0))
    assert abs(narrow.mean() + 1.0) < 0.02 and abs(narrow.std() - 1.0) < 0.02
    assert abs(wide.mean() - math.log(0.02 / 0.98) / 2) < 0.02
    assert Init.parse("sparse:k=3,on=0.6") == Init("sparse", k=3, on=0.6)
    with pytest.raises(ValueError):
        Init.parse("gaussian")
    with pytest.raises(ValueError):
        Init.parse("normal:bogus=1")


def test_formula_read_back_and_evaluate():
    net = NormalForm(3, 2, form="dnf", negation=True)
    with torch.no_grad():
        net.inner.weight.fill_(-20.0)
        net.inner.weight[0, 0] = 20.0  # x0
        net.inner.weight[0, 4] = 20.0  # ~x1
        net.inner.weight[1, 2] = 20.0  # x2
        net.outer.weight.fill_(20.0)
    formula = net.formula(names=["a", "b", "c"])
    assert str(formula) == "c | (a & ~b)"
    x = truth_table(3)
    crisp = net(torch.from_numpy(x)).squeeze(-1).detach().numpy() > 0.5
    assert (formula.evaluate(x) == crisp).all()


def test_cnf_read_back_matches_network():
    net = NormalForm(3, 2, form="cnf", negation=False)
    with torch.no_grad():
        net.inner.weight.copy_(torch.tensor([[20.0, 20.0, -20.0], [-20.0, -20.0, 20.0]]))
        net.outer.weight.fill_(20.0)
    formula = net.formula()
    assert str(formula) == "x2 & (x0 | x1)"
    x = truth_table(3)
    assert (formula.evaluate(x) == (net(torch.from_numpy(x)).squeeze(-1).detach().numpy() > 0.5)).all()


def test_dnf_network_learns_known_formula():
    """A DNF net trained on (x0 & ~x2) | (x1 & x3) recovers an equivalent formula, exhaustively checked."""
    target = Formula("dnf", ((Literal(0), Literal(2, True)), (Literal(1), Literal(3))), 4, ("x0", "x1", "x2", "x3"))
    x = truth_table(4)
    y = torch.from_numpy(target.evaluate(x).astype(np.float32))
    torch.manual_seed(0)
    net = NormalForm(4, 8, negation=True, c=2.0, inner_init=Init("sparse", k=1), outer_init=Init("negative"))
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    xs = torch.from_numpy(x)
    for _ in range(1500):
        loss = torch.nn.functional.binary_cross_entropy(net(xs).squeeze(-1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    learned = net.formula()
    assert (learned.evaluate(x) == target.evaluate(x)).all(), str(learned)


def test_xor_formula_read_back():
    neuron = Xor(5)
    with torch.no_grad():
        neuron.weight.copy_(torch.tensor([10.0, -10.0, 10.0, 10.0, -10.0]))
    formula = xor_formula(neuron)
    assert str(formula) == "x0 ^ x2 ^ x3"
    x = truth_table(5)
    assert (formula.evaluate(x) == (x[:, [0, 2, 3]].sum(1) % 2 == 1)).all()


def test_xor_neuron_learns_parity_from_near_symmetric_init():
    """One XOR neuron, zero-mean N(0, 0.1) init, learns parity of 10 bits online (Theorem 1 neuron)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    neuron = Xor(10, init=Init("normal", std=0.1))
    opt = torch.optim.Adam(neuron.parameters(), lr=0.01)
    for _ in range(600):
        x = (rng.random((50, 10)) < 0.5).astype(np.float32)
        y = torch.from_numpy(x.sum(1) % 2)
        loss = torch.nn.functional.binary_cross_entropy(neuron(torch.from_numpy(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    formula = xor_formula(neuron)
    assert str(formula) == " ^ ".join(f"x{i}" for i in range(10))
    x = truth_table(10)
    assert np.array_equal(neuron(torch.from_numpy(x)).detach().numpy() > 0.5, x.sum(1) % 2 == 1)
