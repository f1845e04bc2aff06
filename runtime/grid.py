"""The learned (fuzzy) candidate atoms of a predicate read from its substitution grid instead of gathered.

The first level's power form needs, per restart k, term t and substitution s, the weighted sum
sum_j W[k, t, j] x[k, slot(j, s)] over the fuzzy candidate atoms j. Gathered, that is a (K, atoms, S)
tensor and a batched matrix product over it, every step, and as much again backward. But an atom
q(V_a, V_b, V_c) reads q's valuation, a dense cube, along three of the substitution's variables: the
atoms over one set of variables sum to one small cube per term, (K, T, n_a, n_b, n_c), and the sum over
all atoms is these cubes broadcast over the grid of all variables (K, T, n_0, ..., n_V-1), read at the
kept substitutions. Multiplication (59 learned atoms over 10 sets of three of five variables, 14,001 of
16,807 substitutions kept) does about a sixth of the work this way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from nlndl.compiler.ir import LearnedIR, WorldIR

# the grid form is used where its estimated work is at most this share of the gather's, and the gather's
# (index entries times terms, per step) is at least MIN_GATHER_WORK: below that, on the bundled tasks,
# the grid's several small operations per step cost more than they save
GRID_SHARE = 0.5
MIN_GATHER_WORK = 1_000_000


@dataclass(frozen=True)
class CubeGroup:
    """The fuzzy atoms over one set of variables: their columns, and per atom where its relation's cube lies in
    the valuation (offset, shape) and the variable of each argument."""

    variables: tuple[int, ...]  # increasing
    columns: tuple[int, ...]  # positions among the predicate's fuzzy columns
    offsets: tuple[int, ...]
    shapes: tuple[tuple[int, ...], ...]
    arguments: tuple[tuple[int, ...], ...]  # per atom: its variables, in argument order


def cube(x: torch.Tensor, offset: int, shape: tuple[int, ...], arguments: tuple[int, ...]) -> torch.Tensor:
    """One atom's values over its variables' grid (K, n_a, n_b, ...) in increasing variable order, a view of
    the valuation x (K, atoms): q(B, A) is q's cube transposed, q(A, A) its diagonal."""
    values = x[:, offset : offset + math.prod(shape)].reshape(x.shape[0], *shape)
    labels = list(arguments)
    while len(set(labels)) < len(labels):  # a repeated variable: the diagonal over its two axes, moved last
        i = next(i for i, v in enumerate(labels) if labels.index(v) < i)
        j = labels.index(labels[i])
        values = values.diagonal(0, 1 + j, 1 + i)
        labels = [v for a, v in enumerate(labels) if a not in (i, j)] + [labels[i]]
    return values.permute(0, *(1 + labels.index(v) for v in sorted(labels)))


class ColumnGrid(nn.Module):
    """Where one learned predicate's fuzzy atoms are read from the valuation cubes of one world (see the module
    docstring): groups of atoms by their variables, and the kept substitutions' flat indices in the grid."""

    def __init__(
        self,
        sizes: tuple[int, ...],
        grid: np.ndarray,
        groups: list[CubeGroup],
        clustered: list[list[int]],
        negation: bool,
    ) -> None:
        super().__init__()
        self.sizes, self.groups, self.clusters, self.negation = sizes, groups, clustered, negation
        # per group, the shape its (K, T, cube) sum is viewed as to broadcast over the grid: 1 for other variables
        self.views = [tuple(n if v in g.variables else 1 for v, n in enumerate(sizes)) for g in groups]
        self.register_buffer("grid", torch.from_numpy(np.ascontiguousarray(grid, dtype=np.int64)), persistent=False)
        for i, group in enumerate(groups):
            self.register_buffer(f"columns_{i}", torch.tensor(group.columns, dtype=torch.long), persistent=False)

    def weighted(self, x: torch.Tensor, weights: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
        """base + sum_j weights[..., j] * (fuzzy column j at each kept substitution): x (K, atoms) the valuation,
        weights (K, T, C) over the fuzzy columns (with negation: the atoms, then the same atoms negated, which
        read 1 - x), base (K, T, S) -> (K, T, S); what ``torch.baddbmm(base, weights, gathered)`` gives."""
        k, t = weights.shape[:2]
        if self.negation:  # w x + v (1 - x) = (w - v) x + v
            half = weights.shape[-1] // 2
            base = base + weights[..., half:].sum(-1, keepdim=True)
            weights = weights[..., :half] - weights[..., half:]
        parts = []
        for i, group in enumerate(self.groups):
            cubes = [
                cube(x, offset, shape, arguments)
                for offset, shape, arguments in zip(group.offsets, group.shapes, group.arguments, strict=True)
            ]
            stacked = torch.stack(cubes, dim=1).reshape(k, len(cubes), -1)  # (K, atoms of the group, cube)
            parts.append(torch.bmm(weights.index_select(-1, getattr(self, f"columns_{i}")), stacked))
        total = None
        for cluster in self.clusters:  # each cluster's groups summed over its variables, then the clusters
            partial = None
            for i in cluster:
                part = parts[i].reshape(k, t, *self.views[i])
                partial = part if partial is None else partial + part
            total = partial if total is None else total + partial
        total = total.expand(k, t, *self.sizes).reshape(k, t, -1)
        return base + total.index_select(-1, self.grid)


def clusters(variables: list[tuple[int, ...]], width: int) -> list[list[int]]:
    """The groups (by their variables) in clusters whose variables together are fewer than all ``width``
    where possible: each cluster is summed on its own smaller grid, and only the clusters' sums are added
    on the whole grid (Multiplication: 4 whole-grid tensors instead of 10)."""
    out: list[tuple[set[int], list[int]]] = []
    for i, vs in enumerate(variables):
        fits = [c for c in out if len(c[0] | set(vs)) < width or len(c[0] | set(vs)) == len(c[0])]
        if fits:
            union, members = min(fits, key=lambda c: len(c[0] | set(vs)))
            union |= set(vs)
            members.append(i)
        else:
            out.append((set(vs), [i]))
    return [members for _, members in out]


def column_grid(ir: LearnedIR, fuzzy_inputs: list[int], world: WorldIR) -> ColumnGrid | None:
    """The grid form of a predicate's fuzzy columns in one world, where it applies and pays (see GRID_SHARE):
    every fuzzy atom is over plain variables (no functions) whose domains are its relation's axes, as the
    gather arrays confirm. None otherwise."""
    grid = world.grid(ir.predicate)
    if not fuzzy_inputs or not grid.size:
        return None
    sizes = tuple(len(world.domains[t]) for t in ir.var_types)
    theta = np.unravel_index(grid, sizes)
    gather = world.gather(ir.predicate)
    found: dict[tuple[int, ...], list[tuple[int, int, tuple[int, ...], tuple[int, ...]]]] = {}
    for column, i in enumerate(fuzzy_inputs):
        atom = ir.inputs[i]
        entry = world.layout[atom.predicate]
        if entry.size != entry.grid:  # a sparse relation is no cube
            return None
        if any(f is not None for f in atom.funcs) or entry.shape != tuple(sizes[v] for v in atom.vars):
            return None
        slots = entry.offset + (np.ravel_multi_index([theta[v] for v in atom.vars], entry.shape) if atom.vars else 0)
        if not np.array_equal(slots, gather[:, i]):  # a type lifted to a supertype reads other positions
            return None
        found.setdefault(tuple(sorted(set(atom.vars))), []).append((column, entry.offset, entry.shape, atom.vars))
    groups = [CubeGroup(variables, *(tuple(a) for a in zip(*atoms, strict=True))) for variables, atoms in found.items()]
    clustered = clusters([g.variables for g in groups], len(sizes))
    gathering = len(fuzzy_inputs) * grid.size * (ir.terms + 1)  # the gather, and the product over it
    work = grid_work(groups, clustered, sizes, grid.size, ir.terms)
    if gathering < MIN_GATHER_WORK or work > GRID_SHARE * gathering:
        return None
    return ColumnGrid(sizes, grid, groups, clustered, ir.negation)


def grid_work(
    groups: list[CubeGroup], clustered: list[list[int]], sizes: tuple[int, ...], kept: int, terms: int
) -> int:
    """Elements the grid form writes per step and restart: each atom's cube per term, each group's sum
    broadcast over its cluster's variables, each cluster's over the whole grid, and the kept substitutions."""
    work = kept
    for cluster in clustered:
        union = {v for i in cluster for v in groups[i].variables}
        work += len(cluster) * math.prod(sizes[v] for v in union) + math.prod(sizes)
        work += sum(len(groups[i].columns) * math.prod(sizes[v] for v in groups[i].variables) for i in cluster)
    return terms * work
