"""Running as one of several processes started by ``torchrun`` (torch.distributed: gloo on CPUs, NCCL on GPUs).

torchrun sets ``WORLD_SIZE``, ``RANK`` and the rendezvous address in each process's environment; a process
started any other way is rank 0 of 1 and nothing here talks to anyone. Work is split by :func:`share` and its
results brought to rank 0 by :func:`gather`, which alone writes outputs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from nlndl.runtime.collective import Collective

T = TypeVar("T")


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    size: int = 1

    @property
    def leader(self) -> bool:
        """Whether this process writes the outputs and prints the report (rank 0)."""
        return self.rank == 0


def process_rank(device: str = "cpu") -> Ranks:
    """This process's rank among those torchrun started (joining their group on first call), or rank 0 of 1."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return Ranks()
    import torch.distributed as dist

    if not dist.is_initialized():
        if device.startswith("cuda"):  # one GPU per process on a machine: "cuda" is then this process's
            import torch

            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    return Ranks(dist.get_rank(), dist.get_world_size())


def share(items: list[T], at: Ranks) -> list[T]:
    """This rank's share of ``items``: every ``size``-th one from its rank on (round robin)."""
    return items[at.rank :: at.size]


def gather(mine: list[Any], at: Ranks) -> list[Any] | None:
    """Every rank's items on rank 0, in the order :func:`share` dealt them (None on the other ranks). The
    items travel in memory between the processes (torch's object collectives), never through a file."""
    if at.size == 1:
        return mine
    import torch.distributed as dist

    parts: list[list[Any] | None] = [None] * at.size if at.leader else []
    dist.gather_object(mine, parts if at.leader else None, dst=0)
    if not at.leader:
        return None
    out = []
    for i in range(max(len(p or []) for p in parts)):
        out += [p[i] for p in parts if p is not None and i < len(p)]
    return out


def barrier(at: Ranks) -> None:
    """Wait for every rank (so that none exits while another still needs the group)."""
    if at.size > 1:
        import torch.distributed as dist

        dist.barrier()


def collective(at: Ranks, device: str = "cpu") -> Collective:
    """What one program's training shares with the other processes (runtime.collective): nothing alone."""
    from nlndl.runtime.collective import Collective, TorchCollective

    return TorchCollective(device) if at.size > 1 else Collective()
