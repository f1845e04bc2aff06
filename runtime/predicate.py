"""A learned predicate's parameters: its NLN's membership weights per restart, the safety gate that keeps
its DNF terms readable as safe clauses, and the per-run preparation of its crisp columns."""

from __future__ import annotations

import torch
from torch import nn

from nlndl.compiler.ir import LearnedIR, projection_of
from nlndl.runtime.config import ChainConfig
from nlndl.runtime.init import initialise, logit
from nlndl.runtime.nln import (
    Fuzzy,
    Prepared,
    Variants,
    fuzzy_any,
    log_keep,
    split_dnf_holds,
    split_dnf_log_none,
    split_nln_forward,
)
from nlndl.runtime.scatter import cap_logs
from nlndl.runtime.sparse_crisp import SparseCrisp

PROJECTION_INIT = 1e-3  # a projection's initial membership: near off, so that it does not drag the other literals


class SafetyGate(nn.Module):
    """A data-independent factor per DNF term that is 1 exactly when the term reads as a Datalog clause
    that is safe and within the pruning assumption, and 0 otherwise (for crisp memberships):

    - every head variable occurs in a selected positive atom;
    - every variable of a selected negated atom occurs in a selected positive atom;
    - when the substitutions were pruned, every extra variable that occurs at all occurs in a selected
      positive extensional atom that binds it (``InputAtom.binds``: the class of clauses whose pruned and full
      semantics agree, see docs/language.md).
    """

    def __init__(self, ir: LearnedIR, learned: set[str]) -> None:
        super().__init__()
        n_vars = len(ir.var_types)
        contains = torch.zeros(len(ir.inputs), n_vars)
        binds = torch.zeros(len(ir.inputs), n_vars)  # the atoms that pruning counts as binding a variable
        for i, atom in enumerate(ir.inputs):
            for v in atom.vars:
                contains[i, v] = 1.0
                binds[i, v] = float(atom.predicate not in learned and atom.binds(v))
        self.negation, self.arity, self.pruned = ir.negation, ir.arity, ir.pruned
        self.register_buffer("contains", contains, persistent=False)
        self.register_buffer("extensional", binds, persistent=False)

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
        fuzzy = ir.fuzzy_inputs(learned)
        crisp = sorted(set(range(len(ir.inputs))) - set(fuzzy))
        n = len(ir.inputs)
        self.crisp_inputs, self.fuzzy_inputs = crisp, fuzzy
        columns = (lambda idx: idx + [n + i for i in idx]) if ir.negation else (lambda idx: idx)
        self.register_buffer("crisp_columns", torch.tensor(columns(crisp), dtype=torch.long), persistent=False)
        self.register_buffer("fuzzy_columns", torch.tensor(columns(fuzzy), dtype=torch.long), persistent=False)
        # negated columns of predicates that depend on this one (stratified negation) have membership 0, and so
        # do the positive columns of projections (edge[0](A), that is edge(A, _)), which are there to be negated
        allowed = None
        projected = [i for i, a in enumerate(ir.inputs) if projection_of(a.predicate) is not None]
        if ir.negation and (projected or any(a.predicate not in ir.negated for a in ir.inputs)):
            positive = [float(i not in projected) for i in range(n)]
            allowed = torch.tensor(positive + [float(a.predicate in ir.negated) for a in ir.inputs])
        self.register_buffer("allowed", allowed, persistent=False)
        # a projection's columns start near off, and the others are drawn as if it were not there, so that a
        # predicate that does not need it learns as it would without it
        projections = set(columns(projected))
        own = torch.tensor([c for c in range(width) if c not in projections], dtype=torch.long)
        self.register_buffer("own_columns", own if projections else None, persistent=False)
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
            if self.own_columns is None:
                initialise(inner, self.inner_init, self.c, generator)
            else:  # the other columns drawn as without the projections, which start near off
                own = torch.empty(inner.shape[0], len(self.own_columns), dtype=inner.dtype)
                initialise(own, self.inner_init, self.c, generator)
                inner.fill_(logit(PROJECTION_INIT) / self.c)
                inner[:, self.own_columns] = own.to(inner.device)
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
        factors: torch.Tensor | SparseCrisp,
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
        if isinstance(factors, SparseCrisp):
            base = factors.base(weights).reshape(k, terms, -1)
        else:
            base = torch.matmul(weights, factors.mT).reshape(k, terms, -1)
        fuzzy = logs[..., self.fuzzy_columns] if self.power else None
        if fuzzy is not None and self.ir.form == "dnf":
            base = base + fuzzy.sum(-1, keepdim=True)
        return Prepared(base, inner[..., self.fuzzy_columns], outer, gate, fuzzy, rows)

    def negated_too(self, fuzzy: Fuzzy) -> Fuzzy:
        """Gathered fuzzy columns with their negations appended, where the predicate reads negated atoms (the grid
        form reads them from its own weights)."""
        if self.ir.negation and isinstance(fuzzy, torch.Tensor):
            return torch.cat([fuzzy, 1.0 - fuzzy], dim=-2)
        return fuzzy

    def forward(self, fuzzy: Fuzzy, prep: Prepared) -> torch.Tensor:
        """Gathered fuzzy candidate atoms, column-major (K, Lf, S), or where to read them -> (K, S) value of F_p."""
        return prep.spread(split_nln_forward(self.negated_too(fuzzy), prep, self.ir.form))

    def log_none(self, fuzzy: Fuzzy, prep: Prepared) -> torch.Tensor:
        """log(1 - F_p) (K, S) of a DNF, for the OR over substitutions without an exp and a log between; capped
        (:func:`nlndl.runtime.scatter.cap_logs`) before it is spread from distinct rows, where it costs U, not S."""
        return prep.spread(cap_logs(split_dnf_log_none(self.negated_too(fuzzy), prep)))

    def holds(self, fuzzy: Fuzzy, prep: Prepared) -> torch.Tensor:
        """Whether F_p of a DNF's crisp program is 1, per substitution (K, S) of bool (see split_dnf_holds)."""
        return prep.spread(split_dnf_holds(self.negated_too(fuzzy), prep))
