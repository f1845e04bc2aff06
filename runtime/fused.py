"""The DNF disjunction of a forward-chaining step as one autograd node with a hand-written backward.

Per substitution s the second level of a DNF reads terms y_st = exp(E_st) (E: the first level's log) and
outer memberships w_t, and everything after it only needs log(1 - OR_t w_t y_st) = sum_t log(1 - w_t y_st):
the OR over the substitutions of one head atom is a sum of these logs (:func:`nlndl.runtime.scatter.scatter_or_logs`).
Written with torch ops this is about eight (restarts, substitutions, terms) tensors forward and as many
backward; here it is three float tensors each way (and two masks).
"""

from __future__ import annotations

import torch

from nlndl.runtime.scatter import BELOW_ONE


class _LogNone(torch.autograd.Function):
    """sum_t log(1 - min(w_t exp(E_st), BELOW_ONE)), with E first capped at 0 when ``cap`` is set."""

    @staticmethod
    def forward(ctx, exponent: torch.Tensor, scale: torch.Tensor, cap: bool) -> torch.Tensor:
        capped = exponent > 0.0 if cap else None
        # the masks are kept, and read backward, only where they hold somewhere (rarely: they are rounding's)
        cap = cap and bool(capped.any())
        terms = torch.exp(exponent.clamp(max=0.0) if cap else exponent)  # (K, S, T)
        fired = terms * scale.unsqueeze(-2)
        saturated = fired > BELOW_ONE
        ctx.saturated = bool(saturated.any())
        out = torch.log1p((fired.clamp_(max=BELOW_ONE) if ctx.saturated else fired).neg_()).sum(-1)
        empty = torch.empty(0, dtype=torch.bool)
        ctx.save_for_backward(terms, scale, saturated if ctx.saturated else empty, capped if cap else empty)
        ctx.cap = cap
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        terms, scale, saturated, capped = ctx.saved_tensors
        fired = terms * scale.unsqueeze(-2)
        # d/d fired of log(1 - fired) is -1 / (1 - fired); zero where the clamp at BELOW_ONE held it
        ratio = grad.unsqueeze(-1) / fired.sub(1.0)
        if ctx.saturated:
            ratio.masked_fill_(saturated, 0.0)
        grad_scale = (ratio * terms).sum(-2) if ctx.needs_input_grad[1] else None
        grad_exponent = None
        if ctx.needs_input_grad[0]:
            grad_exponent = fired.mul_(ratio)
            if ctx.cap:
                grad_exponent.masked_fill_(capped, 0.0)
        return grad_exponent, grad_scale, None


def log_none(exponent: torch.Tensor, scale: torch.Tensor, cap: bool = False) -> torch.Tensor:
    """log(1 - OR) of a DNF's second level: exponent (K, S, T) the log of each term, scale (K, T) its outer
    membership (times its safety gate) -> (K, S). With ``cap``, exponents above 0 (rounding) count as 0."""
    return _LogNone.apply(exponent, scale, cap)
