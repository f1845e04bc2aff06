"""Message passing as gather -> message -> aggregate -> update, over precomputed index arrays.

A forward-chaining step (gather the candidate atoms of every substitution, apply the predicate's NLN,
OR-reduce per head atom, amalgamate with the old valuation) and an LDPC decoder step (gather the
extrinsic messages of every edge, apply a node function, reduce per node) share this shape.
"""

from __future__ import annotations

import torch
from torch import nn

from nlndl.runtime.scatter import scatter_max, scatter_or, scatter_sum

AGGREGATIONS = ("or", "max", "sum")


class MessagePassing(nn.Module):
    """Subclasses define :meth:`message` (and may override :meth:`update`); indices are given per call.

    ``x`` has the node (atom, edge) dimension last and any batch dimensions (restarts, codewords) first.
    """

    def __init__(self, aggregation: str = "or") -> None:
        super().__init__()
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation {aggregation!r}; expected one of {', '.join(AGGREGATIONS)}")
        self.aggregation = aggregation

    def gather(self, x: torch.Tensor, index: torch.Tensor | tuple[torch.Tensor, ...]):
        """x[..., index] for an index of any shape: (..., *index.shape); a tuple of indexes gathers each.

        ``index_select`` on the flattened index: its backward is an ``index_add``, several times faster
        on CPU than the accumulating ``index_put`` behind advanced indexing.
        """
        if isinstance(index, tuple):
            return tuple(self.gather(x, i) for i in index)
        flat = torch.index_select(x, -1, index.reshape(-1))
        return flat.reshape(*x.shape[:-1], *index.shape)

    def message(self, gathered) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def aggregate(self, messages: torch.Tensor, target: torch.Tensor, size: int) -> torch.Tensor:
        """Reduce messages (..., M) into (..., size) by ``target`` (M,)."""
        if self.aggregation == "or":
            return scatter_or(messages, target, size)
        if self.aggregation == "max":
            return scatter_max(messages, target, size)
        return scatter_sum(messages, target, size)

    def update(self, old: torch.Tensor, aggregated: torch.Tensor) -> torch.Tensor:
        return aggregated

    def propagate(
        self,
        x: torch.Tensor,
        index: torch.Tensor | tuple[torch.Tensor, ...],
        target: torch.Tensor,
        size: int,
        old: torch.Tensor,
    ) -> torch.Tensor:
        return self.update(old, self.aggregate(self.message(self.gather(x, index)), target, size))
