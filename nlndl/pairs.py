"""A relation's (head, tail) pairs as a 0/1 sparse matrix, read as entries: their rows and columns, or keys
row * width + column, ascending. Rules are counted and aggregated one by one, often by the thousand on a small
graph, where building a sparse matrix for each step costs more than the arithmetic."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from nlndl.compiler.join import member as member  # the compiler's sorted joins use it too


def canonical(pairs: sparse.spmatrix | sparse.sparray) -> sparse.csr_matrix:
    """``pairs`` as a CSR matrix with each row's columns once, ascending (a copy where they were not; the
    matrix itself where it already is one)."""
    if type(pairs) is not sparse.csr_matrix:
        pairs = sparse.csr_matrix(pairs)
    if not pairs.has_canonical_format:
        pairs = pairs.copy()
        pairs.sum_duplicates()
    return pairs


def entries(pairs: sparse.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """The rows and columns (int64) of the stored entries of a :func:`canonical` matrix, row by row."""
    rows = np.repeat(np.arange(pairs.shape[0], dtype=np.int64), np.diff(pairs.indptr))
    return rows, pairs.indices.astype(np.int64)


def nonzero_keys(pairs: sparse.spmatrix | sparse.sparray) -> np.ndarray:
    """The keys of the nonzero entries of ``pairs``, ascending."""
    pairs = canonical(pairs)
    rows, columns = entries(pairs)
    nonzero = pairs.data != 0
    return rows[nonzero] * pairs.shape[1] + columns[nonzero]


def taken(pairs: sparse.csr_matrix, rows: np.ndarray, keep: np.ndarray) -> sparse.csr_matrix:
    """The entries of ``pairs`` where ``keep`` (a mask over its entries, ``rows`` their rows), in their order:
    a matrix of the same shape."""
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=pairs.shape[0]))])
    return sparse.csr_matrix((pairs.data[keep], pairs.indices[keep], indptr), shape=pairs.shape)
