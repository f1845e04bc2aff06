"""Path rules decided at asked atoms by sorted joins over arrays: the crisp evaluator's case of a knowledge graph.

A path rule ``r(X, Y) :- a1(X, A1), a2(A1, A2), ..., ak(A(k-1), Y)``, each atom possibly read backwards
(``a2(A2, A1)``), derives an asked ``r(h, t)`` where some walk along those relations leads from h to t. Solved
one binding at a time in Python (:func:`nlndl.compiler.crisp.derived_at`), a check of a knowledge-graph
relation's candidate rules walks a million bindings; here the walks from every asked head advance together,
one relation at a time, as arrays of (asked atom, entity reached), each step deduplicated, and the last
step is a membership test of (entity reached, asked tail) among the last relation's facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

import numpy as np

from nlndl.compiler.join import member, ranges, sorted_unique

Step = tuple[str, bool]  # a body atom's relation, and whether the walk reads it backwards (a(A2, A1))
MAX_WALKS = 20_000_000  # entries of one step's walks; past it the rule is left to the evaluator


def binary_over_variables(head_args: tuple, body: Iterable) -> tuple[str, str, list] | None:
    """The head's two variables and the body's atoms, where the head is of two different variables and the
    body of positive binary atoms over variables (no ``_``, no constant); else None: what the sorted joins
    decide (:func:`path_of`, :func:`conjunction_of`)."""
    if len(head_args) != 2 or any(kind != "v" for kind, _ in head_args):
        return None
    first, last = (v for _, v in head_args)
    atoms = list(body)
    if first == last or "_" in (first, last) or not atoms:
        return None
    for atom in atoms:
        if atom.negated or len(atom.args) != 2 or any(kind != "v" or v == "_" for kind, v in atom.args):
            return None
    return first, last, atoms


def path_of(head_args: tuple, body: Iterable) -> list[Step] | None:
    """The steps of a path rule from the head's first variable to its second (see the module docstring), or
    None where the rule is no such path: constants, negation, ``_``, an atom that is not binary, a variable
    met twice along the way, or atoms off the path."""
    binary = binary_over_variables(head_args, body)
    if binary is None:
        return None
    first, last, atoms = binary
    steps: list[Step] = []
    at, seen, left = first, {first}, list(range(len(atoms)))
    while left:
        touching = [i for i in left if at in (atoms[i].args[0][1], atoms[i].args[1][1])]
        if len(touching) != 1:
            return None
        i = touching[0]
        left.remove(i)
        a, b = atoms[i].args[0][1], atoms[i].args[1][1]
        backwards = b == at
        reached = a if backwards else b
        if a == b or reached in seen or (reached == last and left):
            return None
        seen.add(reached)
        steps.append((atoms[i].predicate, backwards))
        at = reached
    return steps if at == last else None


class PathJoin:
    """The facts of a database as arrays, built once per relation and direction read, and the asked pairs of
    path rules decided against them (:meth:`derived`)."""

    def __init__(self, facts: dict[str, set[tuple[int, ...]]]) -> None:
        self.facts = facts
        self.sorted: dict[Step, tuple[np.ndarray, np.ndarray]] = {}  # (sources ascending, their targets)
        self.keys: dict[tuple[Step, int], np.ndarray] = {}  # source * width + target, ascending

    def _pairs(self, step: Step) -> tuple[np.ndarray, np.ndarray]:
        if step not in self.sorted:
            rows = self.facts.get(step[0], set())
            pairs = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=2 * len(rows)).reshape(-1, 2)
            if step[1]:
                pairs = pairs[:, ::-1]
            order = np.argsort(pairs[:, 0], kind="stable")
            self.sorted[step] = (np.ascontiguousarray(pairs[order, 0]), np.ascontiguousarray(pairs[order, 1]))
        return self.sorted[step]

    def _keys(self, step: Step, width: int) -> np.ndarray:
        if (step, width) not in self.keys:
            sources, targets = self._pairs(step)
            self.keys[step, width] = sorted_unique(sources * width + targets)
        return self.keys[step, width]

    def _width(self, asked: np.ndarray, steps: Iterable[Step]) -> int | None:
        """One more than the largest entity of the asked pairs and the steps' facts: the width of (entity,
        entity) keys; None where an entity is negative or such keys would not fit in 64 bits."""
        pairs = [self._pairs(step) for step in steps]
        columns = [asked.ravel(), *(a for pair in pairs for a in pair if a.size)]
        if min(int(c.min()) for c in columns) < 0:
            return None
        width = max(int(c.max()) for c in columns) + 1
        return None if width >= 2**31 else width

    def _walk(self, step: Step, at: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Per entity of ``at``, how many of the step's facts leave it, and the entities they reach, entity by
        entity; None where they would pass :data:`MAX_WALKS`."""
        sources, targets = self._pairs(step)
        lo = np.searchsorted(sources, at, side="left")
        counts = np.searchsorted(sources, at, side="right") - lo
        if int(counts.sum()) > MAX_WALKS:
            return None
        return counts, targets[ranges(lo, counts)]

    def _holds(self, step: Step, width: int, probe: np.ndarray) -> np.ndarray:
        """Per key of ``probe`` (source * width + target), whether it is one of the step's facts."""
        return member(probe, self._keys(step, width))

    def derived(self, steps: list[Step], asked: np.ndarray) -> np.ndarray | None:
        """Of the asked (head, tail) pairs (an (m, 2) int64 array), a mask of those the path derives; None where
        a step's walks would pass :data:`MAX_WALKS` or the keys would not fit in 64 bits."""
        m = asked.shape[0]
        if not m:
            return np.zeros(0, dtype=bool)
        width = self._width(asked, steps)
        if width is None or m >= 2**31:  # (asked atom, entity) and (entity, entity) keys in 64 bits
            return None
        query, node = np.arange(m, dtype=np.int64), asked[:, 0].copy()
        for step in steps[:-1]:
            walked = self._walk(step, node)
            if walked is None:
                return None
            counts, reached = walked
            query, node = np.divmod(sorted_unique(np.repeat(query, counts) * width + reached), width)
        hit = self._holds(steps[-1], width, node * width + asked[query, 1])
        out = np.zeros(m, dtype=bool)
        out[query[hit]] = True
        return out

    def conjunction(self, head_args: tuple, body: Iterable, asked: np.ndarray) -> np.ndarray | None:
        """Of the asked (head, tail) pairs, a mask of those a body of binary atoms over variables derives (the
        body of :func:`conjunction_of`; a path or not: ``r(X, Y) :- p(X, Y), q(Y, A), s(X, A)``): the asked
        pairs' bindings are joined atom by atom, an atom whose variables are all bound a membership test of
        its keys, one with a variable bound a walk to the other's values. None where the body is no such
        conjunction, or its bindings would pass :data:`MAX_WALKS`, or the keys would not fit in 64 bits."""
        atoms = conjunction_of(head_args, body)
        if atoms is None:
            return None
        m = asked.shape[0]
        if not m:
            return np.zeros(0, dtype=bool)
        width = self._width(asked, [(a.predicate, False) for a in atoms])
        if width is None:
            return None
        (_, x), (_, y) = head_args
        query, bound = np.arange(m, dtype=np.int64), {x: asked[:, 0].copy(), y: asked[:, 1].copy()}
        left = list(atoms)
        while left and query.size:
            both = [a for a in left if all(v in bound for _, v in a.args)]
            atom = both[0] if both else next(a for a in left if any(v in bound for _, v in a.args))
            left.remove(atom)
            (_, first), (_, second) = atom.args
            if both:  # a membership test of (first, second) among the atom's facts
                keep = self._holds((atom.predicate, False), width, bound[first] * width + bound[second])
                query, bound = query[keep], {v: values[keep] for v, values in bound.items()}
                continue
            backwards = second in bound  # p(A, Y) with Y bound: read from Y back to A
            walked = self._walk((atom.predicate, backwards), bound[second if backwards else first])
            if walked is None:
                return None
            counts, reached = walked
            query, bound = np.repeat(query, counts), {v: np.repeat(values, counts) for v, values in bound.items()}
            bound[first if backwards else second] = reached
        out = np.zeros(m, dtype=bool)
        out[query] = True
        return out


def conjunction_of(head_args: tuple, body: Iterable) -> list | None:
    """The atoms of a body that :meth:`PathJoin.conjunction` decides: a head of two different variables, and
    positive binary atoms over variables (no ``_``), each sharing a variable with the head or with another
    such atom (none a condition apart from the head's, which the evaluator decides once); else None."""
    binary = binary_over_variables(head_args, body)
    if binary is None:
        return None
    first, last, atoms = binary
    reached, left = {first, last}, list(atoms)
    while left:
        touching = [a for a in left if {v for _, v in a.args} & reached]
        if not touching:
            return None
        for atom in touching:
            left.remove(atom)
            reached |= {v for _, v in atom.args}
    return atoms
