"""Differentiable Boolean neurons with membership weights: conjunction, disjunction, XOR.

Values are fuzzy Booleans in [0, 1]; each input i of neuron j has a membership
m_ji = sigmoid(c * w_ji) saying how much input i takes part in the neuron (paper section 2).
Products use ``torch.prod``, whose backward is exact where a factor is 0 (no log(0) trap).
"""

from __future__ import annotations

import torch
from torch import nn

from nlndl.runtime.formula import Formula, read_xor
from nlndl.runtime.init import Init, initialise


class MembershipLayer(nn.Module):
    """Shared part of the logic layers: a (out, in) weight matrix read through a sigmoid."""

    def __init__(self, in_features: int, out_features: int, c: float = 1.0, init: Init | None = None) -> None:
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError("a logic layer needs at least one input and one output")
        if c < 1.0:
            raise ValueError(f"membership scale c must be >= 1, got {c}")
        self.in_features = in_features
        self.out_features = out_features
        self.c = float(c)
        self.init = init or Init()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        initialise(self.weight, self.init, self.c, generator)

    def membership(self) -> torch.Tensor:
        """Memberships m = sigmoid(c * w), shape (out, in)."""
        return torch.sigmoid(self.c * self.weight)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, out={self.out_features}, c={self.c}, init={self.init.kind}"


def conjunction(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """prod_i (1 - m_ji (1 - x_i)) for x (..., in) and m (..., out, in) -> (..., out)."""
    return (1.0 - m * (1.0 - x.unsqueeze(-2))).prod(-1)


def disjunction(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """1 - prod_i (1 - m_ji x_i) for x (..., in) and m (..., out, in) -> (..., out)."""
    return 1.0 - (1.0 - m * x.unsqueeze(-2)).prod(-1)


class Conjunction(MembershipLayer):
    """A layer of conjunction neurons: F_c(x, m) = 1 - m (1 - x), multiplied over inputs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return conjunction(x, self.membership())


class Disjunction(MembershipLayer):
    """A layer of disjunction neurons: 1 - prod_i (1 - m_i x_i)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return disjunction(x, self.membership())


def xor_patterns(n: int) -> torch.Tensor:
    """The k = ceil(n/2) sign patterns M_i in {-1, +1}^(n') of Theorem 1, n' = n rounded up to even.

    Pattern i (0-based) has a window of k minus signs ending at position n'-1-i and starting at k-i.
    """
    n_even = n + (n % 2)
    k = n_even // 2
    patterns = torch.ones(k, n_even)
    for i in range(k):
        patterns[i, k - i : n_even - i] = -1.0
    return patterns


def hard_sigmoid(z: torch.Tensor) -> torch.Tensor:
    """clip(z, 0, 1): 0 exactly where z = 0, 1 for |z| >= 1 (the g_i of Theorem 1)."""
    return z.clamp(0.0, 1.0)


class Xor(nn.Module):
    """The XOR neuron of Theorem 1: prod_i hs(|x . (M_i * m)|), one membership per input.

    Odd n is padded with a constant 0 input, which leaves parity unchanged.
    """

    def __init__(self, in_features: int, c: float = 1.0, init: Init | None = None) -> None:
        super().__init__()
        if in_features < 1:
            raise ValueError("an XOR neuron needs at least one input")
        if c < 1.0:
            raise ValueError(f"membership scale c must be >= 1, got {c}")
        self.in_features = in_features
        self.c = float(c)
        self.init = init or Init()
        self.weight = nn.Parameter(torch.empty(in_features))
        self.register_buffer("patterns", xor_patterns(in_features), persistent=False)
        self.reset_parameters()

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        initialise(self.weight, self.init, self.c, generator)

    def membership(self) -> torch.Tensor:
        return torch.sigmoid(self.c * self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., n) -> (...,)."""
        m = self.membership()
        if self.in_features % 2:
            x = torch.nn.functional.pad(x, (0, 1))
            m = torch.nn.functional.pad(m, (0, 1))
        sums = x @ (self.patterns * m).T  # (..., k)
        return hard_sigmoid(sums.abs()).prod(-1)

    def extra_repr(self) -> str:
        return f"in={self.in_features}, c={self.c}, init={self.init.kind}"


def xor_formula(neuron: Xor, threshold: float = 0.5, names: list[str] | None = None) -> Formula:
    """Read an XOR neuron back as the parity of the inputs whose membership exceeds ``threshold``."""
    return read_xor(neuron.membership().detach().cpu().numpy(), threshold, names)
