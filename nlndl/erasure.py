"""The binary erasure channel and the maximum-likelihood erasure decoder (numpy, batched).

On the BEC every received bit is either correct or erased, so ML decoding is linear algebra: the
erased bits x_E solve H_E x_E = H_K x_K over GF(2), and an erased bit is recovered exactly when the
solution space fixes it. No decoder can recover more bits than this one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def random_codewords(basis: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` codewords drawn uniformly from the code spanned by ``basis`` (k, n): (count, n) uint8."""
    messages = rng.integers(0, 2, size=(count, basis.shape[0]), dtype=np.uint8)
    return ((messages.astype(np.int64) @ basis.astype(np.int64)) % 2).astype(np.uint8)


def erase(count: int, n: int, eps: float | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Erasure pattern (count, n) bool: each bit erased with probability eps (a scalar or one per word)."""
    eps = np.asarray(eps, dtype=float).reshape(-1, 1) if np.ndim(eps) else float(eps)
    return rng.random((count, n)) < eps


@dataclass(frozen=True)
class Decoded:
    """Hard decisions of a decoder: bit values and the bits it left erased (both (count, n))."""

    value: np.ndarray
    erased: np.ndarray

    def bit_errors(self, truth: np.ndarray) -> np.ndarray:
        """(count, n) bool: a bit is in error when still erased or decoded to the wrong value."""
        return self.erased | (self.value != truth)

    def rates(self, truth: np.ndarray) -> tuple[float, float]:
        """(bit error rate, word error rate) against the transmitted words."""
        errors = self.bit_errors(truth)
        return float(errors.mean()), float(errors.any(1).mean())


def ml_decode(h: np.ndarray, received: np.ndarray, erased: np.ndarray, chunk: int = 256) -> Decoded:
    """ML erasure decoding of a batch: Gauss-Jordan elimination over GF(2) restricted to erased columns.

    ``received`` holds the channel's bits (values at erased positions are ignored). Rows are packed into
    bytes and the batch is eliminated together, one column at a time.
    """
    h = (np.asarray(h) % 2).astype(bool)
    erased = np.asarray(erased, dtype=bool)
    known_bits = np.asarray(received, dtype=bool) & ~erased
    values, left = np.zeros(erased.shape, dtype=np.uint8), erased.copy()
    for start in range(0, erased.shape[0], chunk):
        sl = slice(start, start + chunk)
        values[sl], left[sl] = _ml_chunk(h, known_bits[sl], erased[sl])
    return Decoded(values, left)


def _ml_chunk(h: np.ndarray, known_bits: np.ndarray, erased: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b, n = erased.shape
    m = h.shape[0]
    syndrome = (h[None].astype(np.int64) * known_bits[:, None, :]).sum(-1) % 2  # (b, m): H_K x_K
    augmented = np.concatenate([h[None] & erased[:, None, :], syndrome[..., None].astype(bool)], axis=-1)
    packed = np.packbits(augmented, axis=-1)  # (b, m, bytes)
    rows = np.arange(b)
    used = np.zeros((b, m), dtype=bool)
    pivot_row = np.full((b, n), -1)
    for col in np.flatnonzero(erased.any(0)):
        byte, mask = col // 8, np.uint8(1 << (7 - col % 8))
        column = (packed[:, :, byte] & mask) != 0
        candidates = column & ~used
        has = candidates.any(1)
        if not has.any():
            continue
        pivot = candidates.argmax(1)
        column[rows, pivot] = False
        column &= has[:, None]
        packed ^= column[..., None] * packed[rows, pivot][:, None, :]
        used[rows[has], pivot[has]] = True
        pivot_row[has, col] = pivot[has]
    reduced = np.unpackbits(packed, axis=-1, count=n + 1).astype(bool)
    weight = reduced[..., :n].sum(-1)  # a pivot row with no free column fixes its bit
    safe = np.maximum(pivot_row, 0)
    solved = (pivot_row >= 0) & (weight[rows[:, None], safe] == 1)
    values = np.where(erased, solved & reduced[rows[:, None], safe, n], known_bits).astype(np.uint8)
    return values, erased & ~solved
