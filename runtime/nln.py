"""The NLN arithmetic of one learned predicate, batched over K restarts: the two-level network on gathered
columns, and its split form where extensional (crisp) columns enter as one matrix product per run."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from nlndl.runtime.fused import log_none
from nlndl.runtime.grid import ColumnGrid
from nlndl.runtime.layers import conjunction, disjunction
from nlndl.runtime.scatter import log_not, product_or

LOG_FLOOR = 1e-6  # memberships are capped at 1 - LOG_FLOOR inside log(1 - m)
# a crisp first-level term's log is 0 where it holds and at most log(LOG_FLOOR), about -13.8, per false
# selected atom where it does not: halfway tells the two apart whatever the rounding of the sums
CRISP_HOLDS = math.log(LOG_FLOOR) / 2


def log_keep(m: torch.Tensor) -> torch.Tensor:
    """log(1 - m), with m capped at 1 - LOG_FLOOR: the exponent of the power form (1 - m)^x."""
    return torch.log1p(-m.clamp(max=1.0 - LOG_FLOOR))


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
        """Per distinct crisp row (K, U) -> per substitution (K, S); a no-op without ``rows``. A gather with the
        index broadcast: on CPU several times faster than index_select along the last dim, and the same copy."""
        return values if self.rows is None else values.gather(-1, self.rows.expand(*values.shape[:-1], -1))

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


def split_dnf_holds(fuzzy: Fuzzy, prep: Prepared) -> torch.Tensor:
    """Whether some term of a DNF's crisp program holds, per substitution (K, S) of bool: every membership and
    column is 0 or 1, so this is :func:`split_dnf_log_none` read at 0.5 (but where a head atom has hundreds of
    thousands of substitutions), without its exp and log."""
    holds = _first_exponent(fuzzy, prep, "dnf") > CRISP_HOLDS
    if has_fuzzy(fuzzy) and prep.log_keep_fuzzy is None:
        holds = holds & (conjunction(fuzzy.mT, prep.inner_fuzzy.unsqueeze(1)) > 0.5)
    return (holds & (prep.scale.unsqueeze(1) > 0.5)).any(-1)


def _first_exponent(fuzzy: Fuzzy, prep: Prepared, form: str) -> torch.Tensor:
    """The log of each first-level term's product (K, S, T): crisp columns, plus fuzzy ones under the power form."""
    if prep.log_keep_fuzzy is None or not has_fuzzy(fuzzy):
        return prep.base_exponent.mT
    # (K, T, Lf) @ (K, Lf, S) with the long side (S) last, which BLAS runs faster than (S, Lf) @ (Lf, T)
    # for few terms T, added to the base in the same call; the columns were gathered in this layout,
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
