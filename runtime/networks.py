"""DNF and CNF networks stacked from conjunction and disjunction layers, with optional negated inputs.

A DNF network is a conjunction layer of ``terms`` neurons followed by ``outputs`` disjunction
neurons; a CNF network is the reverse. With ``negation`` the input list is [x, 1 - x], so that
learned terms can use negative literals.
"""

from __future__ import annotations

import torch
from torch import nn

from nlndl.runtime.formula import Formula, read_formula
from nlndl.runtime.init import Init
from nlndl.runtime.layers import Conjunction, Disjunction, MembershipLayer

FORMS = ("dnf", "cnf")


def with_negations(x: torch.Tensor) -> torch.Tensor:
    """[x, 1 - x] along the last dimension."""
    return torch.cat([x, 1.0 - x], dim=-1)


class NormalForm(nn.Module):
    """A two-level NLN network in disjunctive (``dnf``) or conjunctive (``cnf``) normal form."""

    def __init__(
        self,
        in_features: int,
        terms: int,
        outputs: int = 1,
        form: str = "dnf",
        negation: bool = False,
        c: float = 1.0,
        inner_init: Init | None = None,
        outer_init: Init | None = None,
    ) -> None:
        super().__init__()
        if form not in FORMS:
            raise ValueError(f"unknown normal form {form!r}; expected dnf or cnf")
        self.form = form
        self.negation = negation
        self.in_features = in_features
        width = 2 * in_features if negation else in_features
        inner_cls, outer_cls = (Conjunction, Disjunction) if form == "dnf" else (Disjunction, Conjunction)
        self.inner = inner_cls(width, terms, c=c, init=inner_init or Init("sparse", k=1, on=0.5, off=0.01))
        self.outer = outer_cls(terms, outputs, c=c, init=outer_init or Init("normal", mean=-1.0, std=0.1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., in) -> (..., outputs)."""
        if self.negation:
            x = with_negations(x)
        return self.outer(self.inner(x))

    def layers(self) -> tuple[MembershipLayer, MembershipLayer]:
        return self.inner, self.outer

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        for layer in self.layers():
            layer.reset_parameters(generator)

    def formula(self, threshold: float = 0.5, names: list[str] | None = None, output: int = 0) -> Formula:
        """Read output ``output`` back as a crisp Boolean formula (memberships > threshold kept)."""
        inner = self.inner.membership().detach().cpu().numpy()
        outer = self.outer.membership().detach().cpu().numpy()[output]
        return read_formula(self.form, inner, outer, self.in_features, self.negation, threshold, names)
