"""Adam for nlndl's training loops (ILP, LDPC decoders, the Boolean benchmark), written out instead of
taken from ``torch.optim``.

``torch.optim``'s optimizers import ``torch._dynamo`` on their first use (about 1.3 s of a 3.5-5 s
``nlndl train`` run on a small task). This is the same update as ``torch.optim.Adam``'s single-tensor
path, the one it takes for CPU tensors, op for op, so that a seed trains to the same result with either;
its state has the same keys (``step``, ``exp_avg``, ``exp_avg_sq``), which checkpoints store.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class Adam:
    """Adam (Kingma & Ba) with bias correction and no weight decay; ``lr`` may change between steps."""

    def __init__(
        self, params: Iterable[torch.Tensor], lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8
    ) -> None:
        self.params = list(params)
        self.lr, self.betas, self.eps = lr, betas, eps
        self.state: dict[torch.Tensor, dict[str, torch.Tensor]] = {}

    def zero_grad(self) -> None:
        for param in self.params:
            param.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient (as torch's, a parameter without one keeps
        its weights, moments and step count)."""
        beta1, beta2 = self.betas
        for param in self.params:
            if param.grad is None:
                continue
            state = self.state.get(param)
            if not state:
                state = self.state[param] = {
                    "step": torch.tensor(0.0),
                    "exp_avg": torch.zeros_like(param, memory_format=torch.preserve_format),
                    "exp_avg_sq": torch.zeros_like(param, memory_format=torch.preserve_format),
                }
            state["step"] += 1
            step = state["step"].item()
            grad, exp_avg, exp_avg_sq = param.grad, state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step_size = self.lr / (1 - beta1**step)
            denom = (exp_avg_sq.sqrt() / (1 - beta2**step) ** 0.5).add_(self.eps)
            param.addcdiv_(exp_avg, denom, value=-step_size)
