"""NLN neurons: truth tables, crisp equivalence, Theorem 1, gradients at 0."""

import itertools

import numpy as np
import pytest
import torch

from nlndl.runtime.layers import Conjunction, Disjunction, Xor, conjunction, disjunction, xor_patterns


def all_inputs(n: int) -> torch.Tensor:
    return torch.tensor(list(itertools.product([0.0, 1.0], repeat=n)))


def test_fc_fd_truth_tables():
    # Figure 1 of the paper: F_c(x, m) = 1 - m(1 - x), F_d(x, m) = x m.
    table = {(0, 0): (1, 0), (0, 1): (0, 0), (1, 0): (1, 0), (1, 1): (1, 1)}
    for (x, m), (fc, fd) in table.items():
        xt, mt = torch.tensor([[float(x)]]), torch.tensor([[float(m)]])
        assert conjunction(xt, mt).item() == fc
        assert disjunction(xt, mt).item() == fd


@pytest.mark.parametrize("n", range(1, 9))
def test_crisp_memberships_give_crisp_and_or(n):
    x = all_inputs(n)
    masks = all_inputs(n)  # every subset of inputs as a membership vector
    conj = conjunction(x, masks)  # (2^n inputs, 2^n subsets)
    disj = disjunction(x, masks)
    xb, mb = x.bool(), masks.bool()
    want_and = (~mb.unsqueeze(0) | xb.unsqueeze(1)).all(-1)
    want_or = (mb.unsqueeze(0) & xb.unsqueeze(1)).any(-1)
    assert torch.equal(conj, want_and.float())
    assert torch.equal(disj, want_or.float())


def test_layers_use_sigmoid_memberships():
    layer = Conjunction(3, 2, c=2.0)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[30.0, -30.0, -30.0], [30.0, 30.0, -30.0]]))
    out = layer(torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]]))
    assert torch.allclose(out, torch.tensor([[1.0, 0.0], [1.0, 1.0]]), atol=1e-6)
    assert Disjunction(4, 3)(torch.rand(5, 4)).shape == (5, 3)
    with pytest.raises(ValueError):
        Conjunction(3, 2, c=0.5)


def test_xor_patterns_match_equation():
    # n = 6, k = 3: f1 = x1+x2+x3-x4-x5-x6, f2 = x1+x2-x3-x4-x5+x6, f3 = x1-x2-x3-x4+x5+x6
    want = torch.tensor([[1, 1, 1, -1, -1, -1], [1, 1, -1, -1, -1, 1], [1, -1, -1, -1, 1, 1]], dtype=torch.float)
    assert torch.equal(xor_patterns(6), want)
    assert xor_patterns(5).shape == (3, 6)


@pytest.mark.parametrize("n", range(1, 13))
def test_xor_with_unit_weights_is_parity(n):
    neuron = Xor(n)
    with torch.no_grad():
        neuron.weight.fill_(1e4)  # memberships exactly 1 in float32
    assert torch.all(neuron.membership() == 1.0)
    x = all_inputs(n)
    assert torch.equal(neuron(x), x.sum(-1) % 2)


def test_gradients_flow_at_exact_zero_inputs():
    torch.manual_seed(0)
    x = torch.tensor([[0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]], requires_grad=True)
    for layer in (Conjunction(4, 3), Disjunction(4, 3)):
        out = layer(x).sum()
        w_grad, x_grad = torch.autograd.grad(out, [layer.weight, x])
        assert torch.isfinite(w_grad).all() and torch.isfinite(x_grad).all()
        assert (x_grad.abs() > 0).all(), "inputs that are exactly 0 still get a gradient"
        if isinstance(layer, Conjunction):
            # d F_c / d m = x - 1: a zero input is exactly what moves a conjunction membership
            assert (w_grad.abs() > 0).all()
        else:
            # d F_d / d m = x: only inputs that are 1 somewhere in the batch move a disjunction membership
            assert (w_grad[:, [1, 3]].abs() > 0).all() and (w_grad[:, [0, 2]] == 0).all()


def test_gradient_through_a_zero_factor_is_exact():
    # A conjunction with one factor exactly 0: d out / d x_i = prod of the other factors (not NaN, not 0).
    m = torch.tensor([[1.0, 0.5]])
    x = torch.tensor([[0.0, 1.0]], requires_grad=True)
    (grad,) = torch.autograd.grad(conjunction(x, m).sum(), [x])
    assert torch.allclose(grad, torch.tensor([[1.0, 0.0]]))
    assert np.isfinite(grad.numpy()).all()
