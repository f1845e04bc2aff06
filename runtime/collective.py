"""How the processes of a sharded training run combine what each computed on its share of the examples.

Every process holds all restarts' weights, replicated, and a shard of the examples (with the atoms their
substitutions read); the losses, gradients and crisp counts it computes are sums over its shard, so the sum
over the processes is what one process holding every example computes. Every decision the training loop
takes (stop, re-draw, binarise) reads only replicated weights and summed figures, so the processes take the
same ones and stay in step; a decision only one process can take (the wall clock, the verification on the
leader) it takes alone and :meth:`Collective.decide` hands to the others. One process: nothing to combine.
"""

from __future__ import annotations

from typing import Any

import torch


class Collective:
    """The one process of an ordinary run: every combination is the value itself."""

    rank: int = 0
    size: int = 1

    @property
    def leader(self) -> bool:
        """Whether this process verifies, reports and writes (rank 0)."""
        return self.rank == 0

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """The elementwise sum of every process's ``tensor``."""
        return tensor

    def max(self, tensor: torch.Tensor) -> torch.Tensor:
        """The elementwise maximum of every process's ``tensor``."""
        return tensor

    def gradients(self, params: list[torch.Tensor]) -> None:
        """Replace each parameter's gradient by the sum of every process's (a missing one counted as zero)."""

    def decide(self, value: Any) -> Any:
        """The leader's ``value``, on every process (the others pass anything)."""
        return value

    def decide_flag(self, flag: bool) -> bool:
        """The leader's ``flag``, on every process: :meth:`decide` for one bool, as a tensor, each iteration."""
        return flag

    def everyone(self, value: Any) -> list[Any]:
        """Every process's ``value``, in rank order, on every process."""
        return [value]

    def barrier(self) -> None:
        """Wait for every process (so that none exits while the leader still writes)."""


class TorchCollective(Collective):
    """Processes joined in a ``torch.distributed`` group (gloo on CPUs, NCCL on GPUs), already initialised."""

    def __init__(self, device: str = "cpu") -> None:
        import torch.distributed as dist

        self.dist, self.device = dist, device  # NCCL reduces tensors on the GPU only
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def _reduce(self, tensor: torch.Tensor, op) -> torch.Tensor:
        out = tensor.detach().clone()
        self.dist.all_reduce(out, op=op)
        return out

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        return self._reduce(tensor, self.dist.ReduceOp.SUM)

    def max(self, tensor: torch.Tensor) -> torch.Tensor:
        return self._reduce(tensor, self.dist.ReduceOp.MAX)

    def gradients(self, params: list[torch.Tensor]) -> None:
        # which parameters have a gradient anywhere (one that no example's loss reads has none on any process,
        # and Adam leaves it as it is), then every gradient summed in one flat buffer
        flags = torch.tensor([p.grad is not None for p in params], dtype=torch.float32, device=self.device)
        present = [p for p, flag in zip(params, self.max(flags).tolist(), strict=True) if flag]
        for param in present:
            if param.grad is None:
                param.grad = torch.zeros_like(param)
        if not present:
            return
        flat = torch.cat([p.grad.reshape(-1) for p in present])
        self.dist.all_reduce(flat, op=self.dist.ReduceOp.SUM)
        for param, part in zip(present, flat.split([p.numel() for p in present]), strict=True):
            param.grad.copy_(part.view_as(param.grad))

    def decide(self, value: Any) -> Any:
        box = [value if self.leader else None]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def decide_flag(self, flag: bool) -> bool:
        box = torch.tensor([float(flag)], device=self.device)
        self.dist.broadcast(box, src=0)
        return bool(box.item())

    def barrier(self) -> None:
        self.dist.barrier()

    def everyone(self, value: Any) -> list[Any]:
        out: list[Any] = [None] * self.size
        self.dist.all_gather_object(out, value)
        return out
