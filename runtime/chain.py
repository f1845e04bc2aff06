"""Differentiable forward chaining over a compiled program's index arrays, K restarts at once.

Valuations of all ground atoms of a world are one tensor (K, atoms). Each of T steps, for each learned
predicate in stratum order: gather its candidate atoms for every substitution, apply its NLN (one per
restart), OR-reduce per head atom (scatter), and amalgamate with the old valuation. No Python loop
runs over substitutions or atoms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from nlndl.compiler.ir import CompiledProgram, LearnedIR
from nlndl.runtime.init import Init, initialise
from nlndl.runtime.layers import conjunction, disjunction
from nlndl.runtime.message_passing import MessagePassing

AMALGAMATIONS = ("or", "replace", "max")
RECOMPUTE_ABOVE = 1 << 22  # elements of the fuzzy (K, S, terms, L) product worth recomputing in backward


@dataclass
class ChainConfig:
    """How learned predicates are parameterised and chained."""

    restarts: int = 16
    c: float = 2.0  # membership scale: m = sigmoid(c * w)
    inner_init: Init = field(default_factory=lambda: Init("normal", mean=-1.0, std=1.0))
    outer_init: Init = field(default_factory=lambda: Init("normal", mean=-1.0, std=1.0))
    aggregation: str = "or"  # over substitutions of one head atom: product OR or max
    amalgamation: str = "replace"  # new valuation vs old: replace (the reference's default), or, max
    recompute: bool = True  # recompute NLN intermediates in backward (memory ~ inputs, not inputs x terms)
    safety: bool = True  # gate DNF terms that cannot read as safe clauses (see SafetyGate)

    def __post_init__(self) -> None:
        if self.amalgamation not in AMALGAMATIONS:
            raise ValueError(f"unknown amalgamation {self.amalgamation!r}")
        if self.restarts < 1:
            raise ValueError("at least one restart is needed")


def nln_forward(
    x: torch.Tensor, inner: torch.Tensor, outer: torch.Tensor, form: str, gate: torch.Tensor | None = None
) -> torch.Tensor:
    """Batched two-level NLN: x (K, S, L), inner m (K, terms, L), outer m (K, terms) -> (K, S).

    ``gate`` (K, terms) scales each first-level term (the safety gate of DNF clauses).
    """
    first, second = (conjunction, disjunction) if form == "dnf" else (disjunction, conjunction)
    terms = first(x, inner.unsqueeze(1))  # (K, S, terms)
    return _second(terms, outer, form, gate)


def _second(terms: torch.Tensor, outer: torch.Tensor, form: str, gate: torch.Tensor | None) -> torch.Tensor:
    if gate is not None:
        terms = terms * gate.unsqueeze(1)
    second = disjunction if form == "dnf" else conjunction
    return second(terms, outer.unsqueeze(1).unsqueeze(-2)).squeeze(-1)


LOG_FLOOR = 1e-6  # memberships are capped at 1 - LOG_FLOOR inside log(1 - m)


def split_nln_forward(
    crisp: torch.Tensor,
    fuzzy: torch.Tensor,
    inner_crisp: torch.Tensor,
    inner_fuzzy: torch.Tensor,
    outer: torch.Tensor,
    form: str,
    gate: torch.Tensor | None = None,
) -> torch.Tensor:
    """:func:`nln_forward` with the candidate columns split into crisp (extensional: exactly 0 or 1) and
    fuzzy ones. For crisp x the first level's product is exp of a matrix product, since
    1 - m (1 - x) = (1 - m)^(1 - x) and 1 - m x = (1 - m)^x at x in {0, 1}; fuzzy columns keep the
    exact product. Same values (up to the LOG_FLOOR cap) at a fraction of the memory and time."""
    log_keep = torch.log1p(-inner_crisp.clamp(max=1.0 - LOG_FLOOR))  # (K, T, Lc)
    if form == "dnf":
        terms = torch.exp(torch.matmul(1.0 - crisp, log_keep.transpose(-1, -2)))  # (K, S, T)
        if fuzzy.shape[-1]:
            terms = terms * conjunction(fuzzy, inner_fuzzy.unsqueeze(1))
    else:
        keep = torch.exp(torch.matmul(crisp, log_keep.transpose(-1, -2)))  # prod (1 - m x) over crisp x
        if fuzzy.shape[-1]:
            keep = keep * (1.0 - disjunction(fuzzy, inner_fuzzy.unsqueeze(1)))
        terms = 1.0 - keep
    return _second(terms, outer, form, gate)


def fuzzy_any(m: torch.Tensor, incidence: torch.Tensor) -> torch.Tensor:
    """OR over the inputs of each column: m (K, T, L), incidence (L, V) 0/1 -> (K, T, V)."""
    return 1.0 - (1.0 - m.unsqueeze(-1) * incidence).prod(-2)


class SafetyGate(nn.Module):
    """A data-independent factor per DNF term that is 1 exactly when the term reads as a Datalog clause
    that is safe and within the pruning assumption, and 0 otherwise (for crisp memberships):

    - every head variable occurs in a selected positive atom;
    - every variable of a selected negated atom occurs in a selected positive atom;
    - every extra variable that occurs at all occurs in a selected positive extensional atom
      (the class of clauses whose pruned and full semantics agree, see docs/language.md).
    """

    def __init__(self, ir: LearnedIR, learned: set[str]) -> None:
        super().__init__()
        n_vars = len(ir.var_types)
        contains = torch.zeros(len(ir.inputs), n_vars)
        extensional = torch.zeros(len(ir.inputs), 1)
        for i, atom in enumerate(ir.inputs):
            for v in atom.vars:
                contains[i, v] = 1.0
            extensional[i] = float(atom.predicate not in learned)
        self.negation, self.arity = ir.negation, ir.arity
        self.register_buffer("contains", contains, persistent=False)
        self.register_buffer("extensional", contains * extensional, persistent=False)

    def forward(self, inner: torch.Tensor) -> torch.Tensor:
        """inner memberships (K, T, L or 2L) -> gate (K, T)."""
        n = self.contains.shape[0]
        positive, negated = inner[..., :n], inner[..., n:]
        bound = fuzzy_any(positive, self.contains)  # (K, T, V)
        gate = bound[..., : self.arity].prod(-1)
        used = bound
        if self.negation:
            in_negated = fuzzy_any(negated, self.contains)
            gate = gate * (1.0 - in_negated * (1.0 - bound)).prod(-1)
            used = 1.0 - (1.0 - bound) * (1.0 - in_negated)
        extra = slice(self.arity, None)
        grounded = fuzzy_any(positive, self.extensional)
        return gate * (1.0 - used[..., extra] * (1.0 - grounded[..., extra])).prod(-1)


class PredicateFunction(nn.Module):
    """F_p for one learned predicate, one independent NLN per restart."""

    def __init__(self, ir: LearnedIR, config: ChainConfig, learned: set[str]) -> None:
        super().__init__()
        self.ir, self.c = ir, config.c
        self.gate = SafetyGate(ir, learned) if ir.form == "dnf" and config.safety else None
        width = len(ir.inputs) * (2 if ir.negation else 1)
        self.inner = nn.Parameter(torch.empty(config.restarts, ir.terms, width))
        self.outer = nn.Parameter(torch.empty(config.restarts, ir.terms))
        self.inner_init, self.outer_init = config.inner_init, config.outer_init
        self.recompute = config.recompute
        crisp = [i for i, a in enumerate(ir.inputs) if a.predicate not in learned]
        fuzzy = [i for i, a in enumerate(ir.inputs) if a.predicate in learned]
        n = len(ir.inputs)
        self.crisp_inputs, self.fuzzy_inputs = crisp, fuzzy
        columns = (lambda idx: idx + [n + i for i in idx]) if ir.negation else (lambda idx: idx)
        self.register_buffer("crisp_columns", torch.tensor(columns(crisp), dtype=torch.long), persistent=False)
        self.register_buffer("fuzzy_columns", torch.tensor(columns(fuzzy), dtype=torch.long), persistent=False)
        self.reset(torch.arange(config.restarts))

    @torch.no_grad()
    def reset(self, restarts: torch.Tensor, generator: torch.Generator | None = None) -> None:
        """Re-initialise the given restarts (all at construction; NaN ones during training)."""
        for k in restarts.tolist():
            initialise(self.inner[k], self.inner_init, self.c, generator)
            initialise(self.outer[k], self.outer_init, self.c, generator)

    def memberships(self) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.sigmoid(self.c * self.inner), torch.sigmoid(self.c * self.outer)

    def forward(self, crisp: torch.Tensor, fuzzy: torch.Tensor) -> torch.Tensor:
        """Gathered candidate atoms, crisp (K, S, Lc) and fuzzy (K, S, Lf) -> (K, S) value of F_p."""
        if self.ir.negation:
            crisp = torch.cat([crisp, 1.0 - crisp], dim=-1)
            fuzzy = torch.cat([fuzzy, 1.0 - fuzzy], dim=-1)
        inner, outer = self.memberships()
        gate = self.gate(inner) if self.gate is not None else None
        args = (crisp, fuzzy, inner[..., self.crisp_columns], inner[..., self.fuzzy_columns], outer, self.ir.form, gate)
        if self.recompute and torch.is_grad_enabled() and fuzzy.numel() * inner.shape[1] > RECOMPUTE_ABOVE:
            return checkpoint(split_nln_forward, *args, use_reentrant=False)
        return split_nln_forward(*args)


class ChainStep(MessagePassing):
    """One predicate's update: gather -> F_p -> OR per head atom -> amalgamate."""

    def __init__(self, function: PredicateFunction, aggregation: str, amalgamation: str) -> None:
        super().__init__(aggregation)
        self.function, self.amalgamation = function, amalgamation

    def message(self, gathered: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return self.function(*gathered)

    def update(self, old: torch.Tensor, aggregated: torch.Tensor) -> torch.Tensor:
        if self.amalgamation == "replace":
            return aggregated
        if self.amalgamation == "max":
            return torch.maximum(old, aggregated)
        return 1.0 - (1.0 - old) * (1.0 - aggregated)


class WorldTensors(nn.Module):
    """One world's index arrays as (non-trainable) buffers on the model's device."""

    def __init__(self, world, learned: dict[str, PredicateFunction]) -> None:
        super().__init__()
        self.name = world.name
        self.register_buffer("valuation", torch.from_numpy(world.valuation.copy()), persistent=False)
        self.register_buffer("example_slots", torch.from_numpy(world.example_slots.copy()), persistent=False)
        self.register_buffer("example_labels", torch.from_numpy(world.example_labels.copy()), persistent=False)
        self.ranges: dict[str, tuple[int, int]] = {}
        for p, function in learned.items():
            gather = world.gather(p)
            crisp = torch.from_numpy(gather[:, function.crisp_inputs].copy())
            fuzzy = torch.from_numpy(gather[:, function.fuzzy_inputs].copy())
            self.register_buffer(f"gather_crisp_{p}", crisp, persistent=False)
            self.register_buffer(f"gather_fuzzy_{p}", fuzzy, persistent=False)
            local = world.scatter(p) - world.layout[p].offset
            self.register_buffer(f"scatter_{p}", torch.from_numpy(local.copy()), persistent=False)
            self.ranges[p] = (world.layout[p].offset, world.layout[p].size)


class ForwardChainer(nn.Module):
    """The whole differentiable program: per-predicate NLNs and every world's index arrays."""

    def __init__(self, program: CompiledProgram, config: ChainConfig | None = None) -> None:
        super().__init__()
        self.program, self.config = program, config or ChainConfig()
        order = [p for stratum in program.strata for p in stratum if p in program.learned]
        self.order = order
        self.functions = nn.ModuleDict(
            {p: PredicateFunction(program.learned[p], self.config, set(program.learned)) for p in order}
        )
        self.steps_ = nn.ModuleDict(
            {p: ChainStep(self.functions[p], self.config.aggregation, self.config.amalgamation) for p in order}
        )
        self.worlds = nn.ModuleList([WorldTensors(w, dict(self.functions.items())) for w in program.worlds])

    @property
    def restarts(self) -> int:
        return self.config.restarts

    def run(self, world: WorldTensors, steps: int | None = None) -> torch.Tensor:
        """Valuations (K, atoms) after T forward-chaining steps from the world's initial valuation."""
        x = world.valuation.unsqueeze(0).expand(self.restarts, -1).clone()
        for _ in range(self.program.steps if steps is None else steps):
            for p in self.order:
                offset, size = world.ranges[p]
                old = x[:, offset : offset + size]
                index = (getattr(world, f"gather_crisp_{p}"), getattr(world, f"gather_fuzzy_{p}"))
                new = self.steps_[p].propagate(x, index, getattr(world, f"scatter_{p}"), size, old)
                x = torch.cat([x[:, :offset], new, x[:, offset + size :]], dim=1)
        return x

    def losses(self) -> torch.Tensor:
        """Per-restart cross-entropy on every world's examples after T steps, shape (K,)."""
        return self.objective()[0]

    def objective(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per restart: the class-balanced cross-entropy over all examples, the largest per-example error
        |x - y|, and the number of examples on the wrong side of 0.5."""
        device = self.worlds[0].valuation.device
        sums = {True: torch.zeros(self.restarts, device=device), False: torch.zeros(self.restarts, device=device)}
        counts = {True: 0, False: 0}
        worst = torch.zeros(self.restarts, device=device)
        wrong = torch.zeros(self.restarts, device=device)
        for world in self.worlds:
            values = self.run(world)[:, world.example_slots]
            labels = world.example_labels.unsqueeze(0).expand_as(values)
            bce = torch.nn.functional.binary_cross_entropy(values, labels, reduction="none")
            positive = world.example_labels > 0.5
            for kind, mask in ((True, positive), (False, ~positive)):
                sums[kind] = sums[kind] + bce[:, mask].sum(-1)
                counts[kind] += int(mask.sum())
            errors = (values - labels).abs().detach()
            worst = torch.maximum(worst, errors.max(-1).values)
            wrong = wrong + (errors > 0.5).sum(-1)
        # positives and negatives weigh the same: a closed world has many more negatives than positives,
        # and one missed positive must not vanish among them
        present = [k for k in (True, False) if counts[k]]
        loss = sum(sums[k] / counts[k] for k in present) / max(len(present), 1)
        return loss, worst, wrong
