"""nlndl.pairs: a sparse pair matrix read as entries and keys, against the dense matrix and Python sets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from nlndl.pairs import canonical, entries, member, nonzero_keys, taken

SHAPE = (5, 6)


@st.composite
def coo(draw):
    """A COO matrix with duplicate entries, explicit zeros and unsorted columns."""
    n = draw(st.integers(0, 20))
    rows = draw(st.lists(st.integers(0, SHAPE[0] - 1), min_size=n, max_size=n))
    cols = draw(st.lists(st.integers(0, SHAPE[1] - 1), min_size=n, max_size=n))
    data = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n, max_size=n))
    return sparse.coo_matrix((data, (rows, cols)), shape=SHAPE)


@settings(max_examples=60, deadline=None)
@given(coo())
def test_entries_and_keys_are_the_dense_matrix_read_row_by_row(matrix):
    dense = matrix.toarray()
    pairs = canonical(matrix)
    assert pairs.has_canonical_format and np.array_equal(pairs.toarray(), dense)
    rows, columns = entries(pairs)
    keys = rows * SHAPE[1] + columns
    assert np.all(np.diff(keys) > 0), "distinct, ascending"
    assert np.array_equal(nonzero_keys(matrix), np.flatnonzero(dense != 0))
    assert canonical(pairs) is pairs, "a canonical CSR matrix is taken as it is"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=15), st.sets(st.integers(0, 40), max_size=15))
def test_member_is_set_membership(keys, held):
    got = member(np.array(keys, dtype=np.int64), np.array(sorted(held), dtype=np.int64))
    assert got.tolist() == [k in held for k in keys]


@settings(max_examples=60, deadline=None)
@given(coo(), st.data())
def test_taken_keeps_the_masked_entries(matrix, data):
    pairs = canonical(matrix)
    rows, columns = entries(pairs)
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=rows.size, max_size=rows.size)), dtype=bool)
    part = taken(pairs, rows, keep)
    expected = np.zeros(SHAPE)
    expected[rows[keep], columns[keep]] = pairs.data[keep]
    assert np.array_equal(part.toarray(), expected)
    assert part.nnz == int(keep.sum())
