"""A predicate's crisp candidate columns held as a sparse 0/1 matrix where few of them are true.

The first level's crisp part is one product per run, (K*T, Lc) @ (Lc, U) over the memberships' logs and the
extensional columns (1 - x for a DNF). On a knowledge graph almost every column is false at almost every
substitution (Kinship's ``Term8``: 1.5% of 48,641 x 225), and the dense product and its gradient were most
of an iteration. Written over x itself, (1 - x) @ W = colsum(W) - x @ W, it costs nnz(x) per row of weights
instead of U x Lc, forward and backward.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

# x is held sparse where at most this share of it is 1 and the dense product (restarts x terms x columns x
# rows, per run) is at least MIN_DENSE_WORK multiply-adds: a CSR product costs 6 to 13 times a dense one
# per multiply-add on a CPU, and below about 10^8 the dense product takes a few milliseconds (the bundled
# ILP tasks all stay dense: Multiplication's is 8 x 10^7 at 4.5%)
SPARSE_SHARE = 0.05
MIN_DENSE_WORK = 100_000_000


def _csr(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    with warnings.catch_warnings():  # torch calls its CSR support beta; the two products used here are stable
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, col, values, shape)


class _Product(torch.autograd.Function):
    """v @ x.T (KT, U), contiguous, for v dense (KT, L) and x sparse (U, L): computed as (x @ v.T).T, and its
    gradient in v, grad @ x, as (x.T @ grad.T).T, so that both directions are row-wise CSR products
    (deterministic) and what follows reads the layout of the dense product."""

    @staticmethod
    def forward(ctx, v: torch.Tensor, x: torch.Tensor, xt: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(xt)
        return torch.sparse.mm(x, v.mT.contiguous()).mT.contiguous()

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (xt,) = ctx.saved_tensors
        return torch.sparse.mm(xt, grad.mT.contiguous()).mT, None, None


class SparseCrisp(nn.Module):
    """One world's crisp columns x (U, Lc) of one predicate as CSR (and its transpose), and how the crisp
    factors of :meth:`nlndl.runtime.predicate.PredicateFunction.crisp_factors` are made from it."""

    def __init__(self, ones: torch.Tensor, form: str, negation: bool, dtype: torch.dtype = torch.float32) -> None:
        """``ones``: where x is 1, (U, Lc) bool."""
        super().__init__()
        self.form, self.negation = form, negation
        self.shape = tuple(ones.shape)
        for name, matrix in (("x", ones), ("xt", ones.mT)):
            rows, cols = torch.nonzero(matrix, as_tuple=True)  # row-major order: CSR's
            crow = torch.zeros(matrix.shape[0] + 1, dtype=torch.long)
            crow[1:] = torch.cumsum(torch.bincount(rows, minlength=matrix.shape[0]), 0)
            self.register_buffer(f"{name}_crow", crow, persistent=False)
            self.register_buffer(f"{name}_col", cols, persistent=False)
        # every stored entry is 1, in both orders: one array of values serves x and its transpose
        self.register_buffer("values", torch.ones(self.x_col.shape[0], dtype=dtype), persistent=False)

    def base(self, weights: torch.Tensor) -> torch.Tensor:
        """weights (KT, Lc') @ factors.T -> (KT, U), factors the dense crisp factors: 1 - x for a DNF, x for a
        CNF, and with negation the negated columns beside them (x for a DNF, 1 - x for a CNF)."""
        n = self.shape[1]
        if self.negation:  # w f + v (1 - f) = v + (w - v) f over the column pairs
            plain, negated = weights[:, :n], weights[:, n:]
            if self.form == "dnf":
                constant, over_x = plain.sum(-1), negated - plain
            else:
                constant, over_x = negated.sum(-1), plain - negated
        elif self.form == "dnf":
            constant, over_x = weights.sum(-1), -weights
        else:
            constant, over_x = None, weights
        values = self.values.to(weights.dtype)
        x = _csr(self.x_crow, self.x_col, values, self.shape)
        xt = _csr(self.xt_crow, self.xt_col, values, (self.shape[1], self.shape[0]))
        product = _Product.apply(over_x, x, xt)  # (KT, U)
        return product if constant is None else product + constant.unsqueeze(-1)


def sparse_crisp(factors: torch.Tensor, form: str, negation: bool, slots: int) -> SparseCrisp | None:
    """The crisp factors (U, Lc') of a predicate in one world as :class:`SparseCrisp`, where that pays (see
    SPARSE_SHARE); ``slots``: restarts x terms, the rows of the weights they meet. None otherwise."""
    if factors.numel() == 0 or slots * factors.numel() < MIN_DENSE_WORK:
        return None
    n = factors.shape[1] // 2 if negation else factors.shape[1]
    ones = factors[:, :n] == 0 if form == "dnf" else factors[:, :n] != 0  # a byte per entry: no float copy
    if int(ones.sum()) > SPARSE_SHARE * ones.numel():
        return None
    return SparseCrisp(ones, form, negation, factors.dtype)
