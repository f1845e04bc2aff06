"""Crisp Boolean formulas read back from trained membership weights (numpy only, no torch).

A formula is a list of clauses over literals. In DNF a clause is a conjunction and the formula
their disjunction; in CNF the reverse; an XOR formula is the parity of its selected literals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

KINDS = ("dnf", "cnf", "xor")


@dataclass(frozen=True, order=True)
class Literal:
    """Input ``index``, negated or not."""

    index: int
    negated: bool = False

    def render(self, names: Sequence[str]) -> str:
        return ("~" if self.negated else "") + names[self.index]


@dataclass(frozen=True)
class Formula:
    """A crisp formula over ``arity`` inputs."""

    kind: str
    clauses: tuple[tuple[Literal, ...], ...]
    arity: int
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown formula kind {self.kind!r}")

    def evaluate(self, x: np.ndarray) -> np.ndarray:
        """Crisp value on a (batch, arity) 0/1 array -> (batch,) bool."""
        x = np.asarray(x).astype(bool)
        batch = x.shape[0]

        def lit(literal: Literal) -> np.ndarray:
            value = x[:, literal.index]
            return ~value if literal.negated else value

        if self.kind == "xor":
            out = np.zeros(batch, dtype=bool)
            for literal in (lit for clause in self.clauses for lit in clause):
                out ^= lit(literal)
            return out
        inner_all = self.kind == "dnf"  # DNF: clause = AND of literals; CNF: clause = OR
        clause_values = []
        for clause in self.clauses:
            value = np.full(batch, inner_all)
            for literal in clause:
                value = (value & lit(literal)) if inner_all else (value | lit(literal))
            clause_values.append(value)
        if not clause_values:
            return np.full(batch, not inner_all)  # empty DNF is False, empty CNF is True
        stacked = np.stack(clause_values)
        return stacked.any(0) if inner_all else stacked.all(0)

    def __str__(self) -> str:
        if self.kind == "xor":
            lits = [lit.render(self.names) for clause in self.clauses for lit in clause]
            return " ^ ".join(lits) if lits else "false"
        inner, outer = (" & ", " | ") if self.kind == "dnf" else (" | ", " & ")
        empty_clause, empty_formula = ("true", "false") if self.kind == "dnf" else ("false", "true")
        parts = []
        for clause in self.clauses:
            body = inner.join(lit.render(self.names) for lit in clause) or empty_clause
            parts.append(f"({body})" if len(clause) > 1 and len(self.clauses) > 1 else body)
        return outer.join(parts) if parts else empty_formula


def default_names(arity: int) -> tuple[str, ...]:
    return tuple(f"x{i}" for i in range(arity))


def selected(row: np.ndarray, arity: int, negation: bool, threshold: float) -> list[Literal]:
    """The literals a neuron's membership row selects (membership above ``threshold``), in column order; with
    ``negation`` the row has 2 x arity columns, the inputs then their negations. The one binarisation of
    memberships: formulas (:func:`read_formula`) and learned rules (``nlndl.extract``) are read with it."""
    chosen = np.flatnonzero(row > threshold)
    if negation:
        return [Literal(int(i) % arity, bool(i >= arity)) for i in chosen]
    return [Literal(int(i)) for i in chosen]


def read_formula(
    form: str,
    inner: np.ndarray,
    outer: np.ndarray,
    arity: int,
    negation: bool,
    threshold: float = 0.5,
    names: Sequence[str] | None = None,
) -> Formula:
    """Threshold inner (terms, width) and outer (terms,) memberships into a formula; no duplicate or absorbed clause."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"membership threshold must lie in (0, 1), got {threshold}")
    names = tuple(names) if names is not None else default_names(arity)
    if len(names) != arity:
        raise ValueError(f"{len(names)} names given for {arity} inputs")
    clauses: list[tuple[Literal, ...]] = []
    for term in np.flatnonzero(outer > threshold):
        clause = tuple(sorted(selected(inner[term], arity, negation, threshold)))
        if clause not in clauses:
            clauses.append(clause)
    clauses = _absorbed(clauses)
    clauses.sort(key=lambda c: (len(c), c))
    return Formula(form, tuple(clauses), arity, names)


def _absorbed(clauses: list[tuple[Literal, ...]]) -> list[tuple[Literal, ...]]:
    """Drop every clause that holds all literals of another (absorption: a | (a & b) = a, a & (a | b) = a)."""
    sets = [frozenset(c) for c in clauses]
    return [c for c, s in zip(clauses, sets, strict=True) if not any(o < s for o in sets)]


def read_xor(membership: np.ndarray, threshold: float = 0.5, names: Sequence[str] | None = None) -> Formula:
    """An XOR neuron's memberships as the parity of the selected inputs."""
    arity = membership.shape[-1]
    names = tuple(names) if names is not None else default_names(arity)
    selected = tuple(Literal(int(i)) for i in np.flatnonzero(membership > threshold))
    return Formula("xor", (selected,) if selected else (), arity, names)
