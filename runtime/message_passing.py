"""Gather and aggregate, the two halves of message passing over precomputed index arrays.

A forward-chaining step (gather the candidate atoms of every substitution, apply the predicate's NLN, OR-reduce
per head atom, amalgamate with the old valuation: :class:`nlndl.runtime.chain.ChainStep`) and an LDPC decoder
round (gather the extrinsic messages of every edge, apply a node function, reduce per node:
:class:`nlndl.runtime.decoder.ErasureDecoder`) are both written with these two functions. ``x`` has the node
(atom, edge) dimension last and any batch dimensions (restarts, codewords) first.
"""

from __future__ import annotations

import torch

from nlndl.runtime.scatter import scatter_max, scatter_or, scatter_sum

AGGREGATIONS = ("or", "max", "sum")


def gather(x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """x[..., index] for an index of any shape: (..., *index.shape).

    ``index_select`` on the flattened index: its backward is an ``index_add``, several times faster on CPU than
    the accumulating ``index_put`` behind advanced indexing.
    """
    flat = torch.index_select(x, -1, index.reshape(-1))
    return flat.reshape(*x.shape[:-1], *index.shape)


def aggregate(messages: torch.Tensor, target: torch.Tensor, size: int, aggregation: str = "or") -> torch.Tensor:
    """Reduce messages (..., M) into (..., size) by ``target`` (M,): product OR, maximum or sum."""
    if aggregation == "or":
        return scatter_or(messages, target, size)
    if aggregation == "max":
        return scatter_max(messages, target, size)
    if aggregation == "sum":
        return scatter_sum(messages, target, size)
    raise ValueError(f"unknown aggregation {aggregation!r}; expected one of {', '.join(AGGREGATIONS)}")
