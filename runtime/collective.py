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

    def totals(
        self, sums: list[torch.Tensor], maxima: list[torch.Tensor] = ()
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Every process's ``sums`` added and ``maxima`` maxed, elementwise, in one exchange."""
        return list(sums), list(maxima)

    def step(
        self, losses: torch.Tensor, worst: torch.Tensor, wrong: torch.Tensor, params: list[torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """What one training iteration exchanges: per restart every process's share of the ``losses`` and of
        the ``wrong`` examples added and the ``worst`` errors maxed (returned), and each parameter's gradient
        replaced by the sum of every process's (where any has one)."""
        return losses, worst, wrong

    def decide(self, value: Any) -> Any:
        """The leader's ``value``, on every process (the others pass anything)."""
        return value

    def decide_flag(self, flag: bool) -> bool:
        """The leader's ``flag``, on every process: :meth:`decide` for one bool, as a tensor, each iteration."""
        return flag

    def everyone(self, value: Any) -> list[Any]:
        """Every process's ``value``, in rank order, on every process."""
        return [value]

    def gather(self, value: Any) -> list[Any] | None:
        """Every process's ``value``, in rank order, on the leader (None on the others)."""
        return [value]

    def barrier(self) -> None:
        """Wait for every process (so that none exits while the leader still writes)."""


class TorchCollective(Collective):
    """Processes joined in a ``torch.distributed`` group (gloo on CPUs, NCCL on GPUs), already initialised."""

    def __init__(self, device: str = "cpu") -> None:
        import torch.distributed as dist

        self.dist, self.device = dist, device  # NCCL reduces tensors on the GPU only
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def totals(
        self, sums: list[torch.Tensor], maxima: list[torch.Tensor] = ()
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        # one all-gather of every figure (an exchange costs milliseconds on a busy machine, the data nothing),
        # then each process adds and maxes the same rows in the same order
        tensors = [*sums, *maxima]
        flat = torch.cat([t.detach().reshape(-1).to(torch.float64) for t in tensors])
        rows = [torch.empty_like(flat) for _ in range(self.size)]
        self.dist.all_gather(rows, flat)
        stacked = torch.stack(rows)
        added, top = stacked.sum(0), stacked.max(0).values
        out, start = [], 0
        for i, t in enumerate(tensors):
            part = (added if i < len(sums) else top)[start : start + t.numel()]
            out.append(part.reshape(t.shape).to(t.dtype))
            start += t.numel()
        return out[: len(sums)], out[len(sums) :]

    def step(
        self, losses: torch.Tensor, worst: torch.Tensor, wrong: torch.Tensor, params: list[torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # one exchange per iteration: the figures, then per parameter a flag (has a gradient here) and the
        # gradient or zeros; a parameter no example's loss reads has none anywhere, and Adam leaves it be
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flags = torch.tensor([float(p.grad is not None) for p in params], device=losses.device)
        (losses, wrong, flags, *grads), (worst,) = self.totals([losses, wrong, flags, *grads], [worst])
        for param, grad, flag in zip(params, grads, flags.tolist(), strict=True):
            if flag:
                param.grad = grad
        return losses, worst, wrong

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

    def gather(self, value: Any) -> list[Any] | None:
        out: list[Any] | None = [None] * self.size if self.leader else None
        self.dist.gather_object(value, out, dst=0)
        return out
