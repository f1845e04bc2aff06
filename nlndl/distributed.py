"""Running as one of several processes started by ``torchrun`` (torch.distributed: gloo on CPUs, NCCL on GPUs).

torchrun sets ``WORLD_SIZE``, ``RANK`` and the rendezvous address in each process's environment; a process
started any other way is rank 0 of 1 and nothing here talks to anyone. A process is known by the
:class:`~nlndl.runtime.collective.Collective` it trains with; work is split by :func:`share` and its results
brought to rank 0 by :func:`gather`, which alone writes outputs.
"""

from __future__ import annotations

import atexit
import os
from typing import Any, TypeVar

from nlndl.runtime.collective import Collective

T = TypeVar("T")


def process_rank(device: str = "cpu") -> Collective:
    """This process among those torchrun started (joining their group on first call), or the only one."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return Collective()
    import torch.distributed as dist

    from nlndl.runtime.collective import TorchCollective

    if not dist.is_initialized():
        if device.startswith("cuda"):  # one GPU per process on a machine: "cuda" is then this process's
            import torch

            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        atexit.register(dist.destroy_process_group)  # gloo's threads joined before the interpreter ends
    return TorchCollective(device)


def share(items: list[T], at: Collective) -> list[T]:
    """This process's share of ``items``: every ``size``-th one from its rank on (round robin)."""
    return items[at.rank :: at.size]


def gather(mine: list[Any], at: Collective) -> list[Any] | None:
    """Every process's items on rank 0, in the order :func:`share` dealt them (None on the other ranks). The
    items travel in memory between the processes (torch's object collectives), never through a file."""
    parts = at.gather(mine)
    if parts is None:
        return None
    out = []
    for i in range(max(len(p) for p in parts)):
        out += [p[i] for p in parts if i < len(p)]
    return out
