"""Differentiable forward chaining over a compiled program's index arrays, K restarts at once.

Valuations of all ground atoms of a world are one tensor (K, atoms). Each of T steps, for each learned
predicate in stratum order: gather its candidate atoms for every substitution, apply its NLN (one per
restart), OR-reduce per head atom (scatter), and amalgamate with the old valuation. No Python loop
runs over substitutions or atoms.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from nlndl.compiler.ir import AMALGAMATIONS, CompiledProgram, LearnedIR
from nlndl.runtime.fused import log_none
from nlndl.runtime.grid import ColumnGrid, column_grid
from nlndl.runtime.init import Init, initialise
from nlndl.runtime.layers import conjunction, disjunction
from nlndl.runtime.message_passing import MessagePassing
from nlndl.runtime.scatter import log_not, product_or, scatter_or_logs

FUZZY_FORMS = ("power", "product")
# how much more a positive example weighs than a negative one in the loss, with P positives and N negatives:
# N / P (each class half the loss), sqrt(N / P), or 1 (the plain mean, the reference's)
CLASS_WEIGHTS = ("balanced", "sqrt", "none")
LOG_FLOOR = 1e-6  # memberships are capped at 1 - LOG_FLOOR inside log(1 - m)


class TimeLimitReached(Exception):
    """A training forward pass passed the model's deadline (checked between forward-chaining steps)."""


def log_keep(m: torch.Tensor) -> torch.Tensor:
    """log(1 - m), with m capped at 1 - LOG_FLOOR: the exponent of the power form (1 - m)^x."""
    return torch.log1p(-m.clamp(max=1.0 - LOG_FLOOR))


def safe_log(x: torch.Tensor) -> torch.Tensor:
    """log(x) for the cross-entropy, at least log(float32's smallest normal), about -87, and finite in value and
    gradient at x = 0: clamping log(x) afterwards (torch's -100) multiplies an infinite gradient by zero, a NaN that
    then re-initialises every restart whose valuation underflows to 0. Written out rather than torch's
    binary_cross_entropy so that a NaN valuation yields a NaN loss (its restart is re-initialised) instead of an
    exception for every restart."""
    return torch.log(x.clamp(min=torch.finfo(torch.float32).tiny))


@dataclass
class ChainConfig:
    """How learned predicates are parameterised and chained."""

    restarts: int | None = None  # None: auto_restarts(program), 64 for small programs, 32, 16 for large
    c: float = 2.0  # membership scale: m = sigmoid(c * w)
    # conjunction weights N(-1, 1), the mean lowered on wide terms (over 17 inputs) to logit(2 / inputs) / c
    inner_init: Init = field(default_factory=lambda: Init("negative", k=2, mean=-1.0, std=2.0))
    outer_init: Init = field(default_factory=lambda: Init("normal", mean=-1.0, std=1.0))
    aggregation: str = "or"  # over substitutions of one head atom: product OR or max
    amalgamation: str | None = None  # new valuation vs old: None, each predicate's sketch option; replace, or, max
    safety: bool = True  # gate DNF terms that cannot read as safe clauses (see SafetyGate)
    fuzzy: str = "power"  # learned (fuzzy) inputs: "power" (1 - m)^(1 - x), or the paper's "product" 1 - m (1 - x)
    class_weight: str = "sqrt"  # a positive example's weight in the loss relative to a negative's (CLASS_WEIGHTS)
    recompute: bool = False  # keep one valuation per step for the backward pass and run each step again there

    def __post_init__(self) -> None:
        if self.amalgamation is not None and self.amalgamation not in AMALGAMATIONS:
            raise ValueError(f"unknown amalgamation {self.amalgamation!r}")
        if self.fuzzy not in FUZZY_FORMS:
            raise ValueError(f"unknown fuzzy form {self.fuzzy!r}; expected one of {', '.join(FUZZY_FORMS)}")
        if self.class_weight not in CLASS_WEIGHTS:
            raise ValueError(f"unknown class weight {self.class_weight!r}; expected one of {', '.join(CLASS_WEIGHTS)}")
        if self.restarts is not None and self.restarts < 1:
            raise ValueError("at least one restart is needed")

    def for_program(self, program: CompiledProgram) -> ChainConfig:
        """This config with the number of restarts decided: the one asked for, else :func:`auto_restarts`."""
        return self if self.restarts is not None else replace(self, restarts=auto_restarts(program))


# restarts by the work of one forward pass (gather index entries x steps): a small program's pass costs
# little more with more restarts (Buzz 34 -> 47 ms per iteration from 16 to 64, one thread), a large one's
# nearly proportionally more (Uncle 104 -> 287 ms), and there the first 16 draws already succeed
RESTART_TIERS = ((64_000, 64), (256_000, 32))
MIN_RESTARTS = 16


def amalgamations(program: CompiledProgram, setting: str | None) -> dict[str, str]:
    """Per learned predicate, how a step's valuation merges with the one before: ``setting`` for all, or
    with None each predicate's sketch option (``.learn add(..., amalgamation=or)``; replace by default)."""
    return {p: setting or ir.amalgamation for p, ir in program.learned.items()}


def auto_restarts(program: CompiledProgram) -> int:
    """Restarts trained side by side when none are asked for: more independent draws where they are cheap."""
    work = program.summary()["index_entries"] * program.steps
    return next((k for limit, k in RESTART_TIERS if work <= limit), MIN_RESTARTS)


def nln_forward(
    x: torch.Tensor,
    inner: torch.Tensor,
    outer: torch.Tensor,
    form: str,
    gate: torch.Tensor | None = None,
    fuzzy: str = "product",
) -> torch.Tensor:
    """Batched two-level NLN: x (K, S, L), inner m (K, terms, L), outer m (K, terms) -> (K, S).

    ``gate`` (K, terms) scales each first-level term (the safety gate of DNF clauses); ``fuzzy="power"``
    reads every first-level factor as a power of (1 - m) (see :func:`split_nln_forward`).
    """
    if fuzzy == "power":
        keep = torch.exp(torch.matmul(1.0 - x if form == "dnf" else x, log_keep(inner).mT))
        return _second(keep if form == "dnf" else 1.0 - keep, outer, form, gate)
    first = conjunction if form == "dnf" else disjunction
    terms = first(x, inner.unsqueeze(1))  # (K, S, terms)
    return _second(terms, outer, form, gate)


def _second(terms: torch.Tensor, outer: torch.Tensor, form: str, gate: torch.Tensor | None) -> torch.Tensor:
    if gate is not None:
        terms = terms * gate.unsqueeze(1)
    if form == "dnf":  # the disjunction 1 - prod_t (1 - m_t y_t), precise where every term is tiny
        return product_or(terms * outer.unsqueeze(1), dim=-1)
    return conjunction(terms, outer.unsqueeze(1).unsqueeze(-2)).squeeze(-1)


@dataclass
class Variants:
    """Programs to run in place of the K restarts: slot i runs restart ``rows[i]`` with the DNF terms where
    ``keep[p][i]`` is 0 switched off (a clause dropped) and the inputs where ``body[p][i]`` is 0 left out of
    their terms (a body atom dropped); predicates absent from ``keep`` or ``body`` keep every term or atom."""

    rows: torch.Tensor  # (V,) restart indices
    keep: dict[str, torch.Tensor]  # predicate -> (V, terms) of 0/1
    body: dict[str, torch.Tensor] = field(default_factory=dict)  # predicate -> (V, terms, inputs) of 0/1


@dataclass
class Prepared:
    """What every forward-chaining step of one run reads for one learned predicate in one world,
    computed once: the crisp columns never change during a run, so their whole first-level
    contribution is one matrix product per run instead of one per step."""

    # (K, T, S): the part of each first-level term's log that a run does not change, the sum over crisp
    # columns of log(1 - m) times (1 - x) (DNF) or x (CNF), plus under the power form for a DNF the sum of
    # the fuzzy columns' log(1 - m) (see _first_exponent)
    base_exponent: torch.Tensor
    inner_fuzzy: torch.Tensor  # memberships of the fuzzy columns (K, T, Lf)
    outer: torch.Tensor  # (K, T)
    gate: torch.Tensor | None  # (K, T)
    log_keep_fuzzy: torch.Tensor | None  # log(1 - m) of the fuzzy columns, under the power form
    # with no fuzzy columns, F_p depends on the crisp row alone: base_exponent may then be (K, T, U) over
    # the distinct rows, and F_p computed per row is spread to the substitutions by this index (S,)
    rows: torch.Tensor | None = None

    def spread(self, values: torch.Tensor) -> torch.Tensor:
        """Per distinct crisp row (K, U) -> per substitution (K, S); a no-op without ``rows``."""
        return values if self.rows is None else values.index_select(-1, self.rows)

    @property
    def scale(self) -> torch.Tensor:
        """(K, T): what a DNF's second level multiplies each term by, its outer membership times its gate."""
        return self.outer if self.gate is None else self.outer * self.gate


@dataclass
class GridInputs:
    """The fuzzy columns of one step not gathered but read from the valuation ``x`` (K, atoms) by ``grid``
    (see :mod:`nlndl.runtime.grid`); only under the power form, where they enter a weighted sum alone."""

    x: torch.Tensor
    grid: ColumnGrid


Fuzzy = torch.Tensor | GridInputs  # gathered fuzzy columns (K, Lf, S), or where to read them


def has_fuzzy(fuzzy: Fuzzy) -> bool:
    """Whether the predicate reads any fuzzy (learned) column."""
    return isinstance(fuzzy, GridInputs) or fuzzy.shape[-2] > 0


def split_nln_forward(fuzzy: Fuzzy, prep: Prepared, form: str) -> torch.Tensor:
    """:func:`nln_forward` with the candidate columns split into crisp (extensional: exactly 0 or 1) and
    fuzzy ones. For crisp x the first level's product is exp of a matrix product, since
    1 - m (1 - x) = (1 - m)^(1 - x) and 1 - m x = (1 - m)^x at x in {0, 1} (``prep.base_exponent``).
    Fuzzy columns, gathered column-major as (K, Lf, S), keep the exact product, or under the power form
    (``prep.log_keep_fuzzy`` set) use the same power, which agrees with it at 0 and 1 and costs a matrix
    product instead of a (K, S, terms, Lf) tensor."""
    if form == "dnf":
        return -torch.expm1(split_dnf_log_none(fuzzy, prep))
    exponent = _first_exponent(fuzzy, prep, form)
    keep = torch.exp(exponent)  # prod (1 - m x) over the inputs
    if has_fuzzy(fuzzy) and prep.log_keep_fuzzy is None:
        keep = keep * (1.0 - disjunction(fuzzy.mT, prep.inner_fuzzy.unsqueeze(1)))
    return _second(1.0 - keep, prep.outer, form, prep.gate)


def split_dnf_log_none(fuzzy: Fuzzy, prep: Prepared) -> torch.Tensor:
    """log(1 - F) per substitution (K, S) of a DNF's :func:`split_nln_forward`: what the OR over a head
    atom's substitutions sums (:func:`nlndl.runtime.scatter.scatter_or_logs`)."""
    exponent = _first_exponent(fuzzy, prep, "dnf")
    if has_fuzzy(fuzzy) and prep.log_keep_fuzzy is None:  # the product form: its fuzzy factors are not powers
        terms = torch.exp(exponent) * conjunction(fuzzy.mT, prep.inner_fuzzy.unsqueeze(1))
        return log_not(terms * prep.scale.unsqueeze(1)).sum(-1)
    return log_none(exponent, prep.scale, cap=prep.log_keep_fuzzy is not None and has_fuzzy(fuzzy))


def _first_exponent(fuzzy: Fuzzy, prep: Prepared, form: str) -> torch.Tensor:
    """The log of each first-level term's product (K, S, T): crisp columns, plus fuzzy ones under the power form."""
    if prep.log_keep_fuzzy is None or not has_fuzzy(fuzzy):
        return prep.base_exponent.mT
    # (K, T, Lf) @ (K, Lf, S) with the long side (S) last, which BLAS runs several times faster than
    # (S, Lf) @ (Lf, T) for few terms T (per iteration: Length 164 -> 128 ms, Addition 252 -> 211,
    # Even-Odd 41 -> 35), added to the base in the same call; the columns were gathered in this layout,
    # so neither the product nor its gradient needs a transposed copy. DNF: (1 - x) @ W = colsum(W) -
    # x @ W (colsum is in the base), without a tensor 1 - x; the sign goes on the small factor.
    logs = -prep.log_keep_fuzzy if form == "dnf" else prep.log_keep_fuzzy
    if isinstance(fuzzy, GridInputs):
        exponent = fuzzy.grid.weighted(fuzzy.x, logs, prep.base_exponent).mT
    else:
        exponent = torch.baddbmm(prep.base_exponent, logs, fuzzy).mT
    if form != "dnf":  # the DNF's cap at 0 is part of log_none's autograd node
        exponent = exponent.clamp(max=0.0)  # <= 0 exactly; rounding must not lift a term above 1
    return exponent


def fuzzy_any(m: torch.Tensor, incidence: torch.Tensor) -> torch.Tensor:
    """OR over the inputs of each column: m (K, T, L), incidence (L, V) 0/1 -> (K, T, V)."""
    return 1.0 - (1.0 - m.unsqueeze(-1) * incidence).prod(-2)


class SafetyGate(nn.Module):
    """A data-independent factor per DNF term that is 1 exactly when the term reads as a Datalog clause
    that is safe and within the pruning assumption, and 0 otherwise (for crisp memberships):

    - every head variable occurs in a selected positive atom;
    - every variable of a selected negated atom occurs in a selected positive atom;
    - when the substitutions were pruned, every extra variable that occurs at all occurs in a selected
      positive extensional atom (the class of clauses whose pruned and full semantics agree, see
      docs/language.md).
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
        self.negation, self.arity, self.pruned = ir.negation, ir.arity, ir.pruned
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
        if not self.pruned:
            return gate
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
        self.power = config.fuzzy == "power"
        crisp = [i for i, a in enumerate(ir.inputs) if a.predicate not in learned]
        fuzzy = [i for i, a in enumerate(ir.inputs) if a.predicate in learned]
        n = len(ir.inputs)
        self.crisp_inputs, self.fuzzy_inputs = crisp, fuzzy
        columns = (lambda idx: idx + [n + i for i in idx]) if ir.negation else (lambda idx: idx)
        self.register_buffer("crisp_columns", torch.tensor(columns(crisp), dtype=torch.long), persistent=False)
        self.register_buffer("fuzzy_columns", torch.tensor(columns(fuzzy), dtype=torch.long), persistent=False)
        # negated columns of predicates that depend on this one (stratified negation) have membership 0
        allowed = None
        if ir.negation and any(a.predicate not in ir.negated for a in ir.inputs):
            allowed = torch.tensor([1.0] * n + [float(a.predicate in ir.negated) for a in ir.inputs])
        self.register_buffer("allowed", allowed, persistent=False)
        self.reset(torch.arange(config.restarts))

    def reset(self, restarts: torch.Tensor, generator: torch.Generator | None = None) -> None:
        """Re-initialise the given restarts (all at construction; NaN or stalled ones during training)."""
        self.reset_terms(restarts, torch.ones(len(restarts), self.outer.shape[1], dtype=torch.bool), generator)

    @torch.no_grad()
    def reset_terms(
        self, restarts: torch.Tensor, terms: torch.Tensor, generator: torch.Generator | None = None
    ) -> None:
        """Re-initialise the terms flagged in ``terms`` (len(restarts), T) of the given restarts, keeping the
        others: a fresh draw for every term of each restart, copied where flagged."""
        for k, flags in zip(restarts.tolist(), terms.to(self.inner.device), strict=True):
            inner, outer = torch.empty_like(self.inner[k]), torch.empty_like(self.outer[k])
            initialise(inner, self.inner_init, self.c, generator)
            initialise(outer, self.outer_init, self.c, generator)
            self.inner[k] = torch.where(flags[:, None], inner, self.inner[k])
            self.outer[k] = torch.where(flags, outer, self.outer[k])

    def memberships(
        self, threshold: float | None = None, variants: Variants | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inner (K, T, L) and outer (K, T) memberships; with ``threshold``, each read as 0 or 1 (the rules);
        with ``variants``, those of the restarts it names, with the terms it drops switched off."""
        inner, outer = torch.sigmoid(self.c * self.inner), torch.sigmoid(self.c * self.outer)
        if self.allowed is not None:
            inner = inner * self.allowed
        if variants is not None:
            inner, outer = inner[variants.rows], outer[variants.rows]
        if threshold is not None:
            inner, outer = (inner > threshold).to(inner.dtype), (outer > threshold).to(outer.dtype)
        if variants is not None and self.ir.predicate in variants.keep:
            outer = outer * variants.keep[self.ir.predicate]
        if variants is not None and self.ir.predicate in variants.body:
            inner = inner * variants.body[self.ir.predicate]
        return inner, outer

    def crisp_factors(self, crisp: torch.Tensor) -> torch.Tensor:
        """The gathered crisp columns (S, Lc) of one world as the exponents of (1 - m) in the first level's
        product: 1 - x for DNF, x for CNF, negated columns appended. Fixed for a world: computed once."""
        if self.ir.negation:
            crisp = torch.cat([crisp, 1.0 - crisp], dim=-1)
        return 1.0 - crisp if self.ir.form == "dnf" else crisp

    def prepare(
        self,
        factors: torch.Tensor,
        rows: torch.Tensor | None = None,
        threshold: float | None = None,
        variants: Variants | None = None,
    ) -> Prepared:
        """Everything a run's steps share, from one world's :meth:`crisp_factors` (for a predicate with no
        learned candidate atoms, its distinct rows, with ``rows`` saying which one each substitution has,
        see :func:`distinct_rows`); with ``threshold``, for the crisp program read from the memberships
        (see :meth:`memberships` for ``variants``)."""
        inner, outer = self.memberships(threshold, variants)
        gate = self.gate(inner) if self.gate is not None else None
        logs = log_keep(inner)
        k, terms, _ = logs.shape
        # (K * T, Lc) @ (Lc, U): one matrix product for all restarts, whose crisp inputs are the same
        weights = logs[..., self.crisp_columns].reshape(k * terms, -1)
        base = torch.matmul(weights, factors.mT).reshape(k, terms, -1)
        fuzzy = logs[..., self.fuzzy_columns] if self.power else None
        if fuzzy is not None and self.ir.form == "dnf":
            base = base + fuzzy.sum(-1, keepdim=True)
        return Prepared(base, inner[..., self.fuzzy_columns], outer, gate, fuzzy, rows)

    def forward(self, fuzzy: Fuzzy, prep: Prepared) -> torch.Tensor:
        """Gathered fuzzy candidate atoms, column-major (K, Lf, S), or where to read them -> (K, S) value of F_p."""
        if self.ir.negation and isinstance(fuzzy, torch.Tensor):
            fuzzy = torch.cat([fuzzy, 1.0 - fuzzy], dim=-2)
        return prep.spread(split_nln_forward(fuzzy, prep, self.ir.form))

    def log_none(self, fuzzy: Fuzzy, prep: Prepared) -> torch.Tensor:
        """log(1 - F_p) (K, S) of a DNF, for the OR over substitutions without an exp and a log between."""
        if self.ir.negation and isinstance(fuzzy, torch.Tensor):
            fuzzy = torch.cat([fuzzy, 1.0 - fuzzy], dim=-2)
        return prep.spread(split_dnf_log_none(fuzzy, prep))


class ChainStep(MessagePassing):
    """One predicate's update: gather -> F_p -> OR per head atom -> amalgamate."""

    def __init__(self, function: PredicateFunction, aggregation: str, amalgamation: str) -> None:
        super().__init__(aggregation)
        self.function, self.amalgamation = function, amalgamation

    prepared: Prepared | None = None  # set by ForwardChainer.run for the duration of a run

    def gather(self, x: torch.Tensor, index: torch.Tensor | ColumnGrid) -> Fuzzy:
        """The fuzzy columns: gathered by an index (Lf, S), or, for a :class:`ColumnGrid`, read in the product."""
        return GridInputs(x, index) if isinstance(index, ColumnGrid) else super().gather(x, index)

    def message(self, gathered: torch.Tensor) -> torch.Tensor:
        return self.function(gathered, self.prepared)

    def propagate(
        self, x: torch.Tensor, index: torch.Tensor, target: torch.Tensor, size: int, old: torch.Tensor
    ) -> torch.Tensor:
        if self.function.ir.form == "dnf" and self.aggregation == "or":  # the OR of ORs: sum their logs
            logs = self.function.log_none(self.gather(x, index), self.prepared)
            return self.update(old, scatter_or_logs(logs, target, size))
        return super().propagate(x, index, target, size, old)

    def update(self, old: torch.Tensor, aggregated: torch.Tensor) -> torch.Tensor:
        if self.amalgamation == "replace":
            return aggregated
        if self.amalgamation == "max":
            return torch.maximum(old, aggregated)
        return 1.0 - (1.0 - old) * (1.0 - aggregated)


# a predicate with no learned candidate atoms runs on distinct rows only where they are at most this
# share of its substitutions (sorting: 6,232 of 38,016); above it little is saved, and spreading the rows
# back to the substitutions is one more copy
DISTINCT_ROWS_SHARE = 0.5


def distinct_rows(factors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The distinct rows of a world's crisp factors (S, Lc) and, per substitution, the index of its row
    (None where deduplicating would not pay): for a predicate that reads no learned atom, substitutions
    that see the same extensional atoms have the same value, so F_p runs on U distinct rows instead of S.
    (With learned atoms the crisp part alone could be shared, but its product runs once per run, not
    once per step: sharing it measured no faster on the runtime benchmark's programs.)"""
    if factors.numel() == 0:
        return factors, None
    unique, rows = torch.unique(factors, dim=0, return_inverse=True)
    if unique.shape[0] > DISTINCT_ROWS_SHARE * factors.shape[0]:
        return factors, None
    return unique, rows


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
            # extensional atoms keep their values during a run: store the values, not where to gather them
            crisp = torch.from_numpy(world.valuation[gather[:, function.crisp_inputs]])
            # column-major (Lf, S): gathered as (K, Lf, S), the operand the first level's product wants
            fuzzy = torch.from_numpy(np.ascontiguousarray(gather[:, function.fuzzy_inputs].T))
            factors, rows = function.crisp_factors(crisp), None
            if not function.fuzzy_inputs:
                factors, rows = distinct_rows(factors)
            self.register_buffer(f"crisp_{p}", factors, persistent=False)
            self.register_buffer(f"crisp_rows_{p}", rows, persistent=False)
            self.register_buffer(f"gather_fuzzy_{p}", fuzzy, persistent=False)
            local = world.scatter(p) - world.layout[p].offset
            self.register_buffer(f"scatter_{p}", torch.from_numpy(local.copy()), persistent=False)
            self.ranges[p] = (world.layout[p].offset, world.layout[p].size)
            grid = column_grid(function.ir, function.fuzzy_inputs, world) if function.power else None
            self.add_module(f"grid_{p}", grid)

    def fuzzy_columns(self, predicate: str) -> torch.Tensor | ColumnGrid:
        """How a step reads the predicate's fuzzy columns: its grid where it has one, else the gather index."""
        grid = getattr(self, f"grid_{predicate}")
        return grid if grid is not None else getattr(self, f"gather_fuzzy_{predicate}")


class ForwardChainer(nn.Module):
    """The whole differentiable program: per-predicate NLNs and every world's index arrays."""

    def __init__(self, program: CompiledProgram, config: ChainConfig | None = None) -> None:
        super().__init__()
        self.program, self.config = program, (config or ChainConfig()).for_program(program)
        order = [p for stratum in program.strata for p in stratum if p in program.learned]
        self.order = order
        self.functions = nn.ModuleDict(
            {p: PredicateFunction(program.learned[p], self.config, set(program.learned)) for p in order}
        )
        merge = amalgamations(program, self.config.amalgamation)
        self.steps_ = nn.ModuleDict({p: ChainStep(self.functions[p], self.config.aggregation, merge[p]) for p in order})
        self.worlds = nn.ModuleList([WorldTensors(w, dict(self.functions.items())) for w in program.worlds])
        self.deadline: float | None = None  # time.perf_counter() past which a training pass stops between steps

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
            crisp, rows = getattr(world, f"crisp_{p}"), getattr(world, f"crisp_rows_{p}")
            prepared[p] = self.functions[p].prepare(crisp, rows, threshold, variants)
        recompute = self.config.recompute and torch.is_grad_enabled()
        for _ in range(self.program.steps if steps is None else steps):
            if self.deadline is not None and torch.is_grad_enabled() and time.perf_counter() > self.deadline:
                raise TimeLimitReached
            if recompute:  # keep only the valuation between steps; the backward pass runs the step again
                x = checkpoint(self.step, x, world, threshold, prepared, use_reentrant=False)
            else:
                x = self.step(x, world, threshold, prepared)
        for p in self.order:
            self.steps_[p].prepared = None
        return x

    def step(
        self, x: torch.Tensor, world: WorldTensors, threshold: float | None, prepared: dict[str, Prepared]
    ) -> torch.Tensor:
        """One forward-chaining step: each learned predicate, in stratum order, from the valuations ``x``."""
        for p in self.order:
            self.steps_[p].prepared = prepared[p]
            offset, size = world.ranges[p]
            old = x[:, offset : offset + size]
            index = world.fuzzy_columns(p)
            new = self.steps_[p].propagate(x, index, getattr(world, f"scatter_{p}"), size, old)
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
        return missed, derived

    def losses(self) -> torch.Tensor:
        """Per-restart cross-entropy on every world's examples after T steps, shape (K,)."""
        return self.objective()[0]

    def objective(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per restart: the class-weighted cross-entropy over all examples (:meth:`weigh`), the largest
        per-example error |x - y|, and the number of examples on the wrong side of 0.5."""
        device = self.worlds[0].valuation.device
        sums = {True: torch.zeros(self.restarts, device=device), False: torch.zeros(self.restarts, device=device)}
        counts = {True: 0, False: 0}
        worst = torch.zeros(self.restarts, device=device)
        wrong = torch.zeros(self.restarts, device=device)
        for world in self.worlds:
            values = self.run(world)[:, world.example_slots]
            labels = world.example_labels.unsqueeze(0).expand_as(values)
            bce = -(labels * safe_log(values) + (1.0 - labels) * safe_log(1.0 - values))
            positive = world.example_labels > 0.5
            for kind, mask in ((True, positive), (False, ~positive)):
                sums[kind] = sums[kind] + bce[:, mask].sum(-1)
                counts[kind] += int(mask.sum())
            errors = (values - labels).abs().detach()
            worst = torch.maximum(worst, errors.max(-1).values)
            wrong = wrong + (errors > 0.5).sum(-1)
        return self.weigh(sums, counts), worst, wrong

    def weigh(self, sums: dict[bool, torch.Tensor], counts: dict[bool, int]) -> torch.Tensor:
        """The loss from the per-class sums of cross-entropy. A closed world has many more negatives than
        positives: unweighted, one missed positive vanishes among them; weighted to balance (each class
        half the loss), a clause that covers a few positives pays almost nothing for the negatives it
        also covers (Length: `target(A, B) :- value(A, B)` holds four positives and two negatives).
        The default, sqrt(N / P) per positive, sits between (ChainConfig.class_weight)."""
        present = [k for k in (True, False) if counts[k]]
        # balanced is the general form at weight N / P, kept as the mean of the two class means it was
        # written as, so that its losses stay the same to the last bit
        if len(present) < 2 or self.config.class_weight == "balanced":
            return sum(sums[k] / counts[k] for k in present) / max(len(present), 1)
        weight = 1.0 if self.config.class_weight == "none" else math.sqrt(counts[False] / counts[True])
        return (weight * sums[True] + sums[False]) / (weight * counts[True] + counts[False])
