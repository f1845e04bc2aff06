"""One world's index arrays as tensors on the model's device: what every forward-chaining step reads."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from nlndl.runtime.grid import ColumnGrid, column_grid
from nlndl.runtime.predicate import PredicateFunction
from nlndl.runtime.sparse_crisp import SparseCrisp, sparse_crisp

# a predicate with no learned candidate atoms runs on distinct rows only where they are at most this
# share of its substitutions (sorting: 6,232 of 38,016); above it little is saved, and spreading the rows
# back to the substitutions is one more copy
DISTINCT_ROWS_SHARE = 0.5


def bit_shifts(width: int, device: torch.device) -> torch.Tensor:
    """Each column's bit in a row's key, the first column the highest."""
    return torch.arange(width - 1, -1, -1, dtype=torch.int64, device=device)


def row_keys(factors: torch.Tensor) -> torch.Tensor | None:
    """Each 0/1 row of ``factors`` (S, Lc) as an integer whose bits are its columns, first column highest, so that
    the keys sort as the rows do; None where a value is neither 0 nor 1 or a row is wider than 63 columns."""
    if factors.shape[1] > 63 or not ((factors == 0) | (factors == 1)).all():
        return None
    return (factors.to(torch.int64) << bit_shifts(factors.shape[1], factors.device)).sum(dim=1)


def distinct_rows(factors: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The distinct rows of a world's crisp factors (S, Lc) and, per substitution, the index of its row
    (None where deduplicating would not pay): for a predicate that reads no learned atom, substitutions
    that see the same extensional atoms have the same value, so F_p runs on U distinct rows instead of S.
    (With learned atoms the crisp part alone could be shared, but its product runs once per run, not
    once per step: sharing it measured no faster on the runtime benchmark's programs.)"""
    if factors.numel() == 0:
        return factors, None
    keys = row_keys(factors)
    if keys is None:
        unique, rows = torch.unique(factors, dim=0, return_inverse=True)
    else:  # 0/1 rows as integers: a sort of S numbers, where the rows' own sort compares them column by column
        values, rows = torch.unique(keys, return_inverse=True)
        unique = ((values.unsqueeze(1) >> bit_shifts(factors.shape[1], values.device)) & 1).to(factors.dtype)
    if unique.shape[0] > DISTINCT_ROWS_SHARE * factors.shape[0]:
        return factors, None
    return unique, rows


class WorldTensors(nn.Module):
    """One world's index arrays as (non-trainable) buffers on the model's device.

    A run's valuation holds only the slots of :meth:`WorldIR.run_slots` (``slots``: their places in the world's
    valuation vector): the learned relations' atoms, the examples, and what a fuzzy column reads besides.
    Extensional atoms keep their values during a run, so they are read once, as values (``crisp_<p>``), and
    the tensors a step copies and its backward pass zeroes are no larger than the learned relations (a
    ternary background relation over 67 constants is 300,763 slots; the learned unary one 67)."""

    def __init__(self, world, learned: dict[str, PredicateFunction]) -> None:
        super().__init__()
        self.name = world.name
        slots = world.run_slots({p: function.ir for p, function in learned.items()})
        local = np.full(world.atoms, -1, dtype=np.int64)
        local[slots] = np.arange(len(slots))
        self.register_buffer("slots", torch.from_numpy(slots), persistent=False)
        self.register_buffer("valuation", torch.from_numpy(world.valuation[slots]), persistent=False)
        self.register_buffer("example_slots", torch.from_numpy(local[world.example_slots]), persistent=False)
        self.register_buffer("example_labels", torch.from_numpy(world.example_labels.copy()), persistent=False)
        self.ranges: dict[str, tuple[int, int]] = {}
        for p, function in learned.items():
            gather = world.gather(p)
            # extensional atoms keep their values during a run: store the values, not where to gather them
            crisp = torch.from_numpy(world.valuation[gather[:, function.crisp_inputs]])
            # column-major (Lf, S): gathered as (K, Lf, S), the operand the first level's product wants
            fuzzy = torch.from_numpy(np.ascontiguousarray(local[gather[:, function.fuzzy_inputs]].T))
            factors, rows = function.crisp_factors(crisp), None
            if not function.fuzzy_inputs:
                factors, rows = distinct_rows(factors)
            memberships = function.inner.shape[0] * function.inner.shape[1]
            sparse = sparse_crisp(factors, function.ir.form, function.ir.negation, memberships)
            self.add_module(f"sparse_{p}", sparse)
            self.register_buffer(f"crisp_{p}", None if sparse is not None else factors, persistent=False)
            self.register_buffer(f"crisp_rows_{p}", rows, persistent=False)
            self.register_buffer(f"gather_fuzzy_{p}", fuzzy, persistent=False)
            entry = world.layout[p]
            self.register_buffer(f"scatter_{p}", torch.from_numpy(world.scatter(p) - entry.offset), persistent=False)
            self.ranges[p] = (int(local[entry.offset]) if entry.size else 0, entry.size)
            grid = column_grid(function.ir, function.fuzzy_inputs, world) if function.power else None
            if grid is not None:  # its cubes are learned atoms, all kept
                grid.relocate(local)
            self.add_module(f"grid_{p}", grid)

    def crisp(self, predicate: str) -> tuple[torch.Tensor | SparseCrisp, torch.Tensor | None]:
        """The predicate's crisp factors, dense or sparse (:mod:`nlndl.runtime.sparse_crisp`), and the index of
        each substitution's distinct row (None: one row per substitution)."""
        sparse = getattr(self, f"sparse_{predicate}")
        factors = sparse if sparse is not None else getattr(self, f"crisp_{predicate}")
        return factors, getattr(self, f"crisp_rows_{predicate}")

    def fuzzy_columns(self, predicate: str) -> torch.Tensor | ColumnGrid:
        """How a step reads the predicate's fuzzy columns: its grid where it has one, else the gather index."""
        grid = getattr(self, f"grid_{predicate}")
        return grid if grid is not None else getattr(self, f"gather_fuzzy_{predicate}")
