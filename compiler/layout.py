"""Valuation layouts: where each ground atom of a world lives in the valuation vector.

Dense: every relation takes a block of |D1| x ... x |Dk| slots, row-major. Sparse: an extensional relation
takes one slot per true fact and a learned relation one per demanded atom (an example atom, or one that a
demanded atom's substitutions read); every other atom reads the one always-false slot at the end, as an
atom over an undefined function value does in both. Atoms are found by their row-major grid index, through
a sorted key array where the relation is sparse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from nlndl.compiler.ir import RelationLayout, layout_slots

DENSE_ATOMS = 1 << 20  # layout auto: sparse where the dense valuation would hold more atoms
TABLE_GRID = 1 << 24  # a sparse relation with at most this many atoms in its grid is looked up by a table


@dataclass
class Layout:
    """One world's valuation layout: per relation its entry, and the sorted grid indices of sparse ones."""

    entries: dict[str, RelationLayout]
    keys: dict[str, np.ndarray] = field(default_factory=dict)
    tables: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # see slots

    @property
    def atoms(self) -> int:
        """Length of the valuation vector: every slot, then the always-false one."""
        return sum(e.size for e in self.entries.values()) + 1

    @property
    def false_slot(self) -> int:
        return self.atoms - 1

    def slots(self, name: str, flat: np.ndarray) -> np.ndarray:
        """Slots of relation ``name``'s atoms at grid indices ``flat`` (-1 or not laid out: the false slot):
        for a sparse relation on a grid of at most TABLE_GRID atoms through a slot table over its grid
        (a gather, several times faster than the key search on millions of reads)."""
        entry = self.entries[name]
        if not entry.sparse or entry.grid > TABLE_GRID or flat.size < entry.grid // 8:
            return layout_slots(entry, self.keys.get(name), flat, self.false_slot)
        if name not in self.tables:
            table = np.full(entry.grid + 1, self.false_slot, dtype=np.int64)  # the last entry: index -1
            table[self.keys[name]] = entry.offset + np.arange(entry.size, dtype=np.int64)
            self.tables[name] = table
        return self.tables[name][flat]

    def arrays(self) -> dict[str, np.ndarray]:
        """The key arrays a WorldIR keeps, ``keys/<relation>``."""
        return {f"keys/{name}": keys for name, keys in self.keys.items()}


def build(grids: dict[str, tuple[tuple[int, ...], tuple[str, ...]]], keys: dict[str, np.ndarray]) -> Layout:
    """A layout of the relations ``grids`` (name -> shape, types), in that order; those in ``keys`` sparse."""
    entries, offset = {}, 0
    for name, (shape, types) in grids.items():
        atoms = int(keys[name].size) if name in keys else None
        entries[name] = RelationLayout(offset, shape, types, atoms)
        offset += entries[name].size
    return Layout(entries, {name: keys[name] for name in grids if name in keys})


def fact_keys(rows: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sorted distinct grid indices of facts given as (facts, arity) domain positions."""
    if not shape:
        return np.zeros(min(len(rows), 1), dtype=np.int64)
    return np.unique(np.ravel_multi_index(tuple(rows.T), shape)) if len(rows) else np.zeros(0, dtype=np.int64)


def valuation(layout: Layout, true: dict[str, np.ndarray]) -> np.ndarray:
    """Initial valuations: 1 at the true extensional atoms (``true``: relation -> grid indices), 0 elsewhere."""
    values = np.zeros(layout.atoms, dtype=np.float32)
    for name, flat in true.items():
        if flat.size:
            values[layout.slots(name, flat)] = 1.0
    return values
