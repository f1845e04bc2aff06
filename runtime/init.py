"""Initialisation strategies for membership weights (paper section 2.2).

Memberships are m = sigmoid(c * w). Multiplicative neurons have vanishing gradients when many
memberships sit away from 0 and 1, so for wide inputs most memberships should start near 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

KINDS = ("normal", "sparse", "negative", "constant")


def logit(p: float) -> float:
    """Inverse sigmoid of a probability in (0, 1)."""
    return math.log(p / (1.0 - p))


@dataclass(frozen=True)
class Init:
    """How to initialise one layer's weights.

    kind:
      - ``normal``: w ~ N(mean, std) (the paper's default for moderate sizes).
      - ``sparse``: in each neuron, ``k`` inputs drawn at random start with membership ``on``,
        all others with membership ``off`` ("few memberships near 1, the rest near 0").
      - ``constant``: every w = ``mean`` (symmetric start; m = sigmoid(c * mean)).
      - ``negative``: c*w ~ N(logit(k / fan_in), std): a negative mean chosen from the layer's
        fan-in so that about ``k`` inputs per neuron start selected; w's mean never above ``mean``.
    """

    kind: str = "normal"
    mean: float = 0.0
    std: float = 1.0
    k: int = 1
    on: float = 0.5
    off: float = 0.01

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown init kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        if not (0.0 < self.off < 1.0 and 0.0 < self.on < 1.0):
            raise ValueError("init memberships 'on' and 'off' must lie strictly between 0 and 1")
        if self.k < 0 or self.std < 0:
            raise ValueError("init 'k' and 'std' must be non-negative")

    @classmethod
    def parse(cls, text: str) -> Init:
        """Parse ``kind`` or ``kind:key=value,...`` (e.g. ``sparse:k=2,on=0.6``)."""
        kind, _, rest = text.partition(":")
        fields: dict[str, float | int | str] = {"kind": kind.strip()}
        for item in filter(None, (s.strip() for s in rest.split(","))):
            key, sep, value = item.partition("=")
            if not sep or key not in {"mean", "std", "k", "on", "off"}:
                raise ValueError(f"bad init option {item!r}; use mean=, std=, k=, on=, off=")
            fields[key] = int(value) if key == "k" else float(value)
        return cls(**fields)  # type: ignore[arg-type]


@torch.no_grad()
def initialise(weight: torch.Tensor, init: Init, c: float, generator: torch.Generator | None = None) -> None:
    """Fill ``weight`` (..., fan_in) in place according to ``init`` for membership scale ``c``."""
    fan_in = weight.shape[-1]
    # sample on the CPU (with a CPU generator, for determinism across devices), then copy to the weight
    values = torch.empty(weight.shape, dtype=weight.dtype)
    if init.kind == "normal":
        values.normal_(init.mean, init.std, generator=generator)
    elif init.kind == "constant":
        values.fill_(init.mean)
    elif init.kind == "negative":
        target = min(0.5, max(init.k, 1) / max(fan_in, 1))
        values.normal_(min(init.mean, logit(target) / c), init.std / c, generator=generator)
    else:  # sparse
        values.fill_(logit(init.off) / c)
        k = min(init.k, fan_in)
        if k:
            chosen = torch.rand(weight.shape, generator=generator).topk(k, dim=-1).indices
            values.scatter_(-1, chosen, logit(init.on) / c)
    weight.copy_(values)
