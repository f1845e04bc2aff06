"""Formulas read back from memberships: absorbed clauses are dropped without changing the function."""

import itertools

import numpy as np

from nlndl.runtime.formula import Formula, Literal, read_formula


def test_read_formula_drops_absorbed_clauses():
    inner = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    for form in ("dnf", "cnf"):
        f = read_formula(form, inner, np.ones(3), 3, False, 0.5, ["a", "b", "c"])
        assert [len(c) for c in f.clauses] == [1, 2]  # (a & b) is absorbed by a; (b & c) stays
        x = np.array(list(itertools.product([0, 1], repeat=3)))
        full = Formula(form, tuple(f.clauses) + ((Literal(0), Literal(1)),), 3, ("a", "b", "c"))
        assert np.array_equal(f.evaluate(x), full.evaluate(x))
