"""Differentiable forward chaining over a compiled program's index arrays, K restarts at once.

A run's valuations are one tensor (K, atoms): per restart, the learned relations' atoms (the slots of
``WorldIR.run_slots``; extensional atoms keep their values and are read once, as values). Each of T steps,
for each learned predicate in stratum order: gather its candidate atoms for every substitution, apply its
NLN (one per restart), OR-reduce per head atom (scatter), and amalgamate with the old valuation. No Python
loop runs over substitutions or atoms.
"""

from __future__ import annotations

import math
import time

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from nlndl.compiler.ir import CompiledProgram
from nlndl.runtime.collective import Collective
from nlndl.runtime.config import ChainConfig, amalgamations
from nlndl.runtime.grid import ColumnGrid
from nlndl.runtime.message_passing import aggregate, gather
from nlndl.runtime.nln import GridInputs, Prepared, Variants
from nlndl.runtime.predicate import PredicateFunction
from nlndl.runtime.scatter import scatter_or_logs, scatter_sum
from nlndl.runtime.worlds import WorldTensors


class TimeLimitReached(Exception):
    """A training forward pass passed the model's deadline (checked between forward-chaining steps)."""


def safe_log(x: torch.Tensor) -> torch.Tensor:
    """log(x) for the cross-entropy, at least log(float32's smallest normal), about -87, and finite in value and
    gradient at x = 0: clamping log(x) afterwards (torch's -100) multiplies an infinite gradient by zero, a NaN that
    then re-initialises every restart whose valuation underflows to 0. Written out rather than torch's
    binary_cross_entropy so that a NaN valuation yields a NaN loss (its restart is re-initialised) instead of an
    exception for every restart."""
    return torch.log(x.clamp(min=torch.finfo(torch.float32).tiny))


class ChainStep(nn.Module):
    """One predicate's update, as message passing: gather its fuzzy columns -> F_p per substitution -> aggregate
    per head atom -> amalgamate with the old valuation."""

    def __init__(self, function: PredicateFunction, aggregation: str, amalgamation: str) -> None:
        super().__init__()
        self.function, self.aggregation, self.amalgamation = function, aggregation, amalgamation

    def forward(
        self,
        x: torch.Tensor,
        columns: torch.Tensor | ColumnGrid,
        target: torch.Tensor,
        size: int,
        old: torch.Tensor,
        prepared: Prepared,
        crisp: bool = False,
    ) -> torch.Tensor:
        """The predicate's new valuations (K, size) from all valuations ``x`` (K, atoms); ``columns`` gathers its
        fuzzy inputs (an index (Lf, S)) or reads them in the product (a :class:`ColumnGrid`). ``crisp``: every
        membership and valuation is 0 or 1 (a crisp program's run), so a DNF's OR is an any."""
        fuzzy = GridInputs(x, columns) if isinstance(columns, ColumnGrid) else gather(x, columns)
        if crisp and self.function.ir.form == "dnf" and self.aggregation == "or":
            holds = self.function.holds(fuzzy, prepared).to(old.dtype)
            return self.update(old, (scatter_sum(holds, target, size) > 0).to(old.dtype))
        if self.function.ir.form == "dnf" and self.aggregation == "or":  # the OR of ORs: sum their logs
            return self.update(old, scatter_or_logs(self.function.log_none(fuzzy, prepared), target, size))
        return self.update(old, aggregate(self.function(fuzzy, prepared), target, size, self.aggregation))

    def update(self, old: torch.Tensor, aggregated: torch.Tensor) -> torch.Tensor:
        if self.amalgamation == "replace":
            return aggregated
        if self.amalgamation == "max":
            return torch.maximum(old, aggregated)
        return 1.0 - (1.0 - old) * (1.0 - aggregated)


class ForwardChainer(nn.Module):
    """The whole differentiable program: per-predicate NLNs and every world's index arrays."""

    def __init__(
        self, program: CompiledProgram, config: ChainConfig | None = None, collective: Collective | None = None
    ) -> None:
        """``collective``: the processes whose shards of the examples make up the whole (runtime.collective);
        ``program`` is this process's shard."""
        super().__init__()
        self.program, self.config = program, (config or ChainConfig()).for_program(program)
        self.collective = collective or Collective()
        self._counts: dict[bool, int] | None = None
        order = [p for stratum in program.strata for p in stratum if p in program.learned]
        self.order = order
        self.functions = nn.ModuleDict(
            {p: PredicateFunction(program.learned[p], self.config, set(program.learned)) for p in order}
        )
        merge = amalgamations(program, self.config.amalgamation)
        self.steps_ = nn.ModuleDict({p: ChainStep(self.functions[p], self.config.aggregation, merge[p]) for p in order})
        self.worlds = nn.ModuleList([WorldTensors(w, dict(self.functions.items())) for w in program.worlds])
        self.deadline: float | None = None  # time.perf_counter() past which a training pass stops between steps
        self.balanced: torch.Tensor | None = None  # (K,) restarts weighed balanced whatever the class weight

    @property
    def restarts(self) -> int:
        return self.config.restarts

    def run(
        self,
        world: WorldTensors,
        steps: int | None = None,
        threshold: float | None = None,
        variants: Variants | None = None,
    ) -> torch.Tensor:
        """Valuations (K, atoms) after T forward-chaining steps from the world's initial valuation. With
        ``threshold``, of the crisp program: memberships read as 0 or 1, valuations rounded after every step;
        with ``variants``, of the programs it describes, (V, atoms)."""
        slots = self.restarts if variants is None else len(variants.rows)
        x = world.valuation.unsqueeze(0).expand(slots, -1).clone()
        prepared = {}
        for p in self.order:
            crisp, rows = world.crisp(p)
            prepared[p] = self.functions[p].prepare(crisp, rows, threshold, variants)
        recompute = self.config.recompute and torch.is_grad_enabled()
        for _ in range(self.program.steps if steps is None else steps):
            if self.deadline is not None and torch.is_grad_enabled() and time.perf_counter() > self.deadline:
                raise TimeLimitReached
            if recompute:  # keep only the valuation between steps; the backward pass runs the step again
                x = checkpoint(self.step, x, world, threshold, prepared, use_reentrant=False)
            else:
                x = self.step(x, world, threshold, prepared)
        return x

    def step(
        self, x: torch.Tensor, world: WorldTensors, threshold: float | None, prepared: dict[str, Prepared]
    ) -> torch.Tensor:
        """One forward-chaining step: each learned predicate, in stratum order, from the valuations ``x``."""
        for p in self.order:
            offset, size = world.ranges[p]
            old = x[:, offset : offset + size]
            columns = world.fuzzy_columns(p)
            new = self.steps_[p](
                x, columns, getattr(world, f"scatter_{p}"), size, old, prepared[p], threshold is not None
            )
            if threshold is not None:
                new = (new > 0.5).to(new.dtype)
            x = torch.cat([x[:, :offset], new, x[:, offset + size :]], dim=1)
        return x

    @torch.no_grad()
    def crisp_wrong(self, threshold: float, variants: Variants | None = None) -> torch.Tensor:
        """Per restart (or variant): the examples that the crisp program read from the memberships at
        ``threshold`` gets wrong on the compiled substitutions (memberships read as 0 or 1, valuations
        rounded each step). One forward pass for all: a cheap filter before rules are extracted and evaluated."""
        missed, derived = self.crisp_mistakes(threshold, variants)
        return missed + derived

    @torch.no_grad()
    def crisp_mistakes(self, threshold: float, variants: Variants | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Per restart (or variant), as :meth:`crisp_wrong` counts them: the positive examples the crisp
        program misses and the negative ones it derives."""
        slots = self.restarts if variants is None else len(variants.rows)
        missed = torch.zeros(slots, device=self.worlds[0].valuation.device)
        derived = torch.zeros(slots, device=self.worlds[0].valuation.device)
        for world in self.worlds:
            values = self.run(world, threshold=threshold, variants=variants)[:, world.example_slots] > 0.5
            positive = world.example_labels > 0.5
            missed += (~values & positive).sum(-1)
            derived += (values & ~positive).sum(-1)
        (missed, derived), _ = self.collective.totals([missed, derived])
        return missed, derived

    def losses(self) -> torch.Tensor:
        """Per-restart cross-entropy on every world's examples after T steps, shape (K,)."""
        (losses,), _ = self.collective.totals([self.objective()[0]])
        return losses

    @property
    def example_counts(self) -> dict[bool, int]:
        """The positive (True) and negative (False) examples of every world, over every process's shard."""
        if self._counts is None:
            local = [sum(int((w.example_labels > 0.5).sum()) for w in self.worlds)]
            local.append(sum(int(w.example_labels.numel()) for w in self.worlds) - local[0])
            (total,), _ = self.collective.totals([torch.tensor(local, device=self.worlds[0].valuation.device)])
            total = total.tolist()
            self._counts = {True: int(total[0]), False: int(total[1])}
        return self._counts

    def objective(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per restart: the class-weighted cross-entropy over all examples (:meth:`weigh`), the largest
        per-example error |x - y|, and the number of examples on the wrong side of 0.5. With several
        processes, each of this shard's examples (the class weights are the whole's, so the losses add up to
        the whole's, and their gradients to its gradient; the trainer combines them)."""
        device = self.worlds[0].valuation.device
        sums = {True: torch.zeros(self.restarts, device=device), False: torch.zeros(self.restarts, device=device)}
        worst = torch.zeros(self.restarts, device=device)
        wrong = torch.zeros(self.restarts, device=device)
        for world in self.worlds:
            values = self.run(world)[:, world.example_slots]
            labels = world.example_labels.unsqueeze(0).expand_as(values)
            bce = -(labels * safe_log(values) + (1.0 - labels) * safe_log(1.0 - values))
            positive = world.example_labels > 0.5
            for kind, mask in ((True, positive), (False, ~positive)):
                sums[kind] = sums[kind] + bce[:, mask].sum(-1)
            errors = (values - labels).abs().detach()
            if errors.shape[-1]:  # a shard may hold none of a world's examples
                worst = torch.maximum(worst, errors.max(-1).values)
            wrong = wrong + (errors > 0.5).sum(-1)
        return self.weigh(sums, self.example_counts), worst, wrong

    def weigh(self, sums: dict[bool, torch.Tensor], counts: dict[bool, int]) -> torch.Tensor:
        """The loss from the per-class sums of cross-entropy. A closed world has many more negatives than
        positives: unweighted, one missed positive vanishes among them; weighted to balance (each class
        half the loss), a clause that covers a few positives pays almost nothing for the negatives it
        also covers (Length: `target(A, B) :- value(A, B)` holds four positives and two negatives).
        The default, sqrt(N / P) per positive, sits between (ChainConfig.class_weight). The restarts flagged
        in ``balanced`` (set by the trainer) are weighed balanced whatever the setting."""
        present = [k for k in (True, False) if counts[k]]

        def balanced() -> torch.Tensor:
            # balanced is the general form at weight N / P, kept as the mean of the two class means it was
            # written as, so that its losses stay the same to the last bit
            return sum(sums[k] / counts[k] for k in present) / max(len(present), 1)

        if len(present) < 2 or self.config.class_weight == "balanced":
            return balanced()
        weight = 1.0 if self.config.class_weight == "none" else math.sqrt(counts[False] / counts[True])
        loss = (weight * sums[True] + sums[False]) / (weight * counts[True] + counts[False])
        if self.balanced is None or not self.balanced.any():
            return loss
        return torch.where(self.balanced.to(loss.device), balanced(), loss)
