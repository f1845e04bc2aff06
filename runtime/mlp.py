"""The multilayer perceptron baseline: ReLU hidden layers and a sigmoid output."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


class MLP(nn.Module):
    """ReLU MLP with sigmoid outputs, the paper's comparison model."""

    def __init__(self, in_features: int, hidden: Sequence[int], outputs: int = 1) -> None:
        super().__init__()
        sizes = [in_features, *hidden]
        layers: list[nn.Module] = []
        for a, b in zip(sizes, sizes[1:], strict=False):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(sizes[-1], outputs))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(x))
