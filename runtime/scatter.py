"""Segment reductions for gather/scatter message passing; torch-scatter is probed here, once.

torch's own ``index_add_`` / ``scatter_reduce_`` are the default. torch-scatter (optional, built
from source) is used only when importable and only for sums and maxima, whose gradients it gets
right; products always go through torch (torch-scatter's ``scatter_mul`` has no gradient at 0).
"""

from __future__ import annotations

import math

import torch

try:  # pragma: no cover - depends on an optional source build
    import torch_scatter as _torch_scatter

    WITH_TORCH_SCATTER = True
except ImportError:  # the default
    _torch_scatter = None
    WITH_TORCH_SCATTER = False


def backend() -> str:
    """Name of the scatter implementation in use."""
    return "torch-scatter" if WITH_TORCH_SCATTER else "torch"


def scatter_sum(src: torch.Tensor, index: torch.Tensor, size: int, use_fast: bool = True) -> torch.Tensor:
    """out[..., j] = sum of src[..., i] over i with index[i] == j (reduction over the last dim)."""
    if use_fast and _torch_scatter is not None:
        return _torch_scatter.scatter_add(src, index, dim=-1, dim_size=size)
    out = src.new_zeros(*src.shape[:-1], size)
    return out.index_add(-1, index, src)


def scatter_max(src: torch.Tensor, index: torch.Tensor, size: int, use_fast: bool = True) -> torch.Tensor:
    """out[..., j] = max of src[..., i] over index[i] == j; 0 where no i maps to j (values in [0, 1])."""
    if use_fast and _torch_scatter is not None:
        return _torch_scatter.scatter_max(src, index, dim=-1, dim_size=size)[0].clamp_min(0.0)
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
    return _or_from_logs(scatter_sum(log_not(src), index, size, use_fast=False))


LOG_BELOW_ONE = math.log1p(-BELOW_ONE)  # log(1 - x) at the cap of an OR input


def scatter_or_logs(logs: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """:func:`scatter_or` of values given as their logs(1 - x): the OR of a substitution's terms already is one
    (:func:`nlndl.runtime.fused.log_none`), so it needs no exp and log again; capped as :func:`log_not` caps."""
    return _or_from_logs(scatter_sum(logs.clamp(min=LOG_BELOW_ONE), index, size, use_fast=False))
