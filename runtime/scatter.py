"""Segment reductions for gather/scatter message passing, on torch's own ``index_add`` and ``scatter_reduce``
(CPU and GPU alike; no extension to build)."""

from __future__ import annotations

import math

import torch


def scatter_sum(src: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """out[..., j] = sum of src[..., i] over i with index[i] == j (reduction over the last dim). As scatter_add
    with the index broadcast, not index_add: the same sums in the same order, and its backward pass is a
    gather, which on CPU reads the last dim several times faster than index_add's backward, an index_select."""
    out = src.new_zeros(*src.shape[:-1], size)
    return out.scatter_add(-1, index.expand(*src.shape[:-1], -1), src)


def scatter_max(src: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """out[..., j] = max of src[..., i] over index[i] == j; 0 where no i maps to j (values in [0, 1])."""
    out = src.new_zeros(*src.shape[:-1], size)
    expanded = index.expand_as(src) if index.dim() == src.dim() else index.expand(*src.shape[:-1], -1)
    return out.scatter_reduce(-1, expanded, src, reduce="amax", include_self=True)


# the largest float32 below 1: an OR input capped here keeps log(1 - x) finite in value and gradient
BELOW_ONE = 1.0 - 2.0**-24


def log_not(x: torch.Tensor) -> torch.Tensor:
    """log(1 - x), x capped at BELOW_ONE."""
    return torch.log1p(-x.clamp(max=BELOW_ONE))


def _or_from_logs(logs: torch.Tensor) -> torch.Tensor:
    """1 - exp(s) for s = sum of log(1 - x_i), as -expm1(s): exact where every x_i is tiny, where 1 - prod(1 - x_i)
    in float32 rounds to 0 below x ~ 6e-8 and its log-loss gradient vanishes (a positive example then never pulls
    its derivation up: Addition's 104-atom terms start there)."""
    return -torch.expm1(logs)


def product_or(x: torch.Tensor, dim: int) -> torch.Tensor:
    """Product OR, 1 - prod(1 - x), along ``dim``; precise for small values (see :func:`_or_from_logs`)."""
    return _or_from_logs(log_not(x).sum(dim))


def scatter_or(src: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """Product OR, 1 - prod(1 - src), over each segment; precise for small values (see :func:`_or_from_logs`)."""
    return _or_from_logs(scatter_sum(log_not(src), index, size))


LOG_BELOW_ONE = math.log1p(-BELOW_ONE)  # log(1 - x) at the cap of an OR input


def cap_logs(logs: torch.Tensor) -> torch.Tensor:
    """Logs log(1 - x) capped as :func:`log_not` caps x: at least LOG_BELOW_ONE."""
    return logs.clamp(min=LOG_BELOW_ONE)


def scatter_or_logs(logs: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """:func:`scatter_or` of values given as their logs(1 - x): the OR of a substitution's terms already is one
    (:func:`nlndl.runtime.fused.log_none`), so it needs no exp and log again. The logs come capped by
    :func:`cap_logs` (as :func:`log_not` caps x), which the caller applies where it is cheapest: on a predicate's
    distinct rows, before they are spread to its substitutions."""
    return _or_from_logs(scatter_sum(logs, index, size))
