"""The pairs a knowledge-graph clause's body derives, joined with sparse matrix products.

A clause of a knowledge-graph sketch reads binary atoms over the head's two variables and at most one more
(``r(A, B) :- p(A, C), q(B, C), s(A, B)``). Its body is a conjunctive query whose answer is a product of
0/1 matrices: the atoms between the same two variables are intersected (an elementwise product), an atom
on one variable twice (``p(A, A)``) is a diagonal mask, the third variable is joined away by one product
or, where it hangs off one end, projected to a mask of that end. That replaces the crisp evaluator's
binding-by-binding join, which takes seconds on a graph of hubs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse

from nlndl.compiler.crisp import Rule
from nlndl.paths import boolean

Matrix = sparse.csr_matrix


def binary_head(rule: Rule) -> tuple[str, str] | None:
    """The head's two variables of a clause whose head and body atoms are binary, positive and over named
    variables only (no constant, no anonymous variable), the head's two different; None for any other rule."""
    if len(rule.head_args) != 2 or any(kind != "v" for kind, _ in rule.head_args) or not rule.body:
        return None
    x, y = (value for _, value in rule.head_args)
    if x == y or "_" in (x, y):
        return None
    for atom in rule.body:
        if atom.negated or len(atom.args) != 2 or any(kind != "v" or value == "_" for kind, value in atom.args):
            return None
    return x, y


def body_pairs(rule: Rule, relation: Callable[[str], Matrix], n: int) -> Matrix | None:
    """The (head, tail) pairs ``rule``'s body derives as an n x n 0/1 matrix, ``relation(predicate)`` the
    pairs of a body predicate; None where the rule is not of the shape above (not a :func:`binary_head`
    clause, or more than three variables), for the crisp evaluator."""
    head = binary_head(rule)
    if head is None:
        return None
    x, y = head
    names = {value for atom in rule.body for _, value in atom.args}
    others = names - {x, y}
    if not {x, y} <= names or len(others) > 1:
        return None
    order = {x: 0, y: 1, **{c: 2 for c in others}}
    mask = {v: np.ones(n, dtype=bool) for v in names}
    edges: dict[tuple[str, str], Matrix] = {}
    for atom in rule.body:
        (_, u), (_, v) = atom.args
        pairs = relation(atom.predicate)
        if u == v:
            mask[u] &= pairs.diagonal() > 0
            continue
        key, oriented = ((u, v), pairs) if order[u] < order[v] else ((v, u), pairs.T.tocsr())
        edges[key] = boolean(oriented) if key not in edges else boolean(edges[key].multiply(oriented))
    found = edges.get((x, y))
    if others:
        (c,) = others
        to_x, to_y = (None if m is None else _masked(m, None, mask[c]) for m in (edges.get((x, c)), edges.get((y, c))))
        if to_x is not None and to_y is not None:
            through = boolean(to_x @ to_y.T)
            found = through if found is None else boolean(found.multiply(through))
        elif to_x is not None:
            mask[x] &= _nonempty_rows(to_x)
        elif to_y is not None:
            mask[y] &= _nonempty_rows(to_y)
        elif not mask[c].any():
            return sparse.csr_matrix((n, n), dtype=np.float32)
    if found is None:  # the head's variables are not joined: every pair of their masks
        rows, cols = np.flatnonzero(mask[x]), np.flatnonzero(mask[y])
        h, t = np.repeat(rows, cols.size), np.tile(cols, rows.size)
        return sparse.csr_matrix((np.ones(h.size, dtype=np.float32), (h, t)), shape=(n, n))
    return boolean(_masked(found, mask[x], mask[y]))


def _masked(matrix: Matrix, rows: np.ndarray | None, cols: np.ndarray | None) -> Matrix:
    """``matrix`` with the rows and columns outside ``rows`` and ``cols`` (boolean, or None for all) emptied;
    a product only where a mask leaves something out."""
    if rows is not None and not rows.all():
        matrix = sparse.diags(rows.astype(np.float32), format="csr") @ matrix
    if cols is not None and not cols.all():
        matrix = matrix @ sparse.diags(cols.astype(np.float32), format="csr")
    return matrix


def _nonempty_rows(matrix: Matrix) -> np.ndarray:
    return np.diff(boolean(matrix).indptr) > 0
