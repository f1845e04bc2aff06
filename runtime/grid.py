"""The learned (fuzzy) candidate atoms of a predicate read from its substitution grid instead of gathered.

The first level's power form needs, per restart k, term t and substitution s, the weighted sum
sum_j W[k, t, j] x[k, slot(j, s)] over the fuzzy candidate atoms j. Gathered, that is a (K, atoms, S)
tensor and a batched matrix product over it, every step, and as much again backward. But an atom
q(V_a, V_b, V_c) reads q's valuation, a dense cube, along three of the substitution's variables: the
atoms over one set of variables sum to one small cube per term, (K, T, n_a, n_b, n_c), and a
substitution's sum over all atoms is one cell of each group's cube, added up. The cubes are laid out as
rows of K x T values (a table), so each kept substitution sums a few contiguous rows
(``embedding_bag``), and each row's gradient sums the rows of the substitutions that read it.
Multiplication (59 learned atoms over 10 sets of three of five variables, 14,001 of 16,807 substitutions
kept) does about a sixth of the work this way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nlndl.compiler.ir import LearnedIR, WorldIR

# the grid form is used where its estimated work is at most this share of the gather's, and the gather's
# (index entries times terms, per step and restart) is at least MIN_GATHER_WORK: below that, on the bundled
# tasks, the grid's several small operations per step cost more than they save (Length, 250,000 at 0.60:
# 10-20% faster an iteration; Less than, 16,000 at 0.81, and Husband, 53,000 at 0.78: 30-60% slower)
GRID_SHARE = 0.65
MIN_GATHER_WORK = 200_000


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


class _RowSums(torch.autograd.Function):
    """out[s] = sum_j table[bags[s, j]] (``embedding_bag``'s sum); backward, each table row's gradient sums the
    output rows of the substitutions that read it, ``members[starts[r]:starts[r + 1]]``: the transposed bags,
    as ``embedding_bag`` again, about twice as fast on CPU as its own backward."""

    @staticmethod
    def forward(
        ctx, table: torch.Tensor, bags: torch.Tensor, members: torch.Tensor, starts: torch.Tensor
    ) -> torch.Tensor:
        ctx.save_for_backward(members, starts)
        return F.embedding_bag(bags, table, mode="sum")

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        members, starts = ctx.saved_tensors
        return F.embedding_bag(members, grad.contiguous(), starts, mode="sum"), None, None, None


class ColumnGrid(nn.Module):
    """Where one learned predicate's fuzzy atoms are read from the valuation cubes of one world (see the module
    docstring): groups of atoms by their variables, each group's cubes gathered from the valuation in one
    index, and per kept substitution the table row of its cell in each group's cube."""

    def __init__(self, sizes: tuple[int, ...], grid: np.ndarray, groups: list[CubeGroup], negation: bool) -> None:
        super().__init__()
        self.groups, self.negation = groups, negation
        atoms = max(o + math.prod(s) for g in groups for o, s in zip(g.offsets, g.shapes, strict=True))
        slots = torch.arange(atoms).unsqueeze(0)
        theta = np.unravel_index(grid, sizes)
        bags, start = [], 0
        for i, group in enumerate(groups):
            cubes = [cube(slots, *atom) for atom in zip(group.offsets, group.shapes, group.arguments, strict=True)]
            index = torch.stack(cubes, dim=1).reshape(-1).contiguous()
            self.register_buffer(f"atoms_{i}", index, persistent=False)
            self.register_buffer(f"columns_{i}", torch.tensor(group.columns, dtype=torch.long), persistent=False)
            axes = [sizes[v] for v in group.variables]
            flat = np.ravel_multi_index([theta[v] for v in group.variables], axes) if axes else np.zeros_like(grid)
            bags.append(start + flat)
            start += math.prod(axes)
        bags_np = np.stack(bags, axis=1).astype(np.int64)  # (kept, groups): each substitution's table rows
        self.register_buffer("bags", torch.from_numpy(bags_np), persistent=False)
        # the transposed bags: per table row, the kept substitutions that read it
        rows = bags_np.reshape(-1)
        members = np.argsort(rows, kind="stable") // len(groups)
        starts = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=start))[:-1]])
        self.register_buffer("members", torch.from_numpy(members.astype(np.int64)), persistent=False)
        self.register_buffer("starts", torch.from_numpy(starts.astype(np.int64)), persistent=False)

    def relocate(self, local: np.ndarray) -> None:
        """Gather from another valuation vector: slot s of the world's is slot ``local[s]`` of the new one."""
        for i in range(len(self.groups)):
            index = getattr(self, f"atoms_{i}")
            setattr(self, f"atoms_{i}", torch.from_numpy(local[index.numpy()]).to(index.device))

    def weighted(self, x: torch.Tensor, weights: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
        """base + sum_j weights[..., j] * (fuzzy column j at each kept substitution): x (K, atoms) the valuation,
        weights (K, T, C) over the fuzzy columns (with negation: the atoms, then the same atoms negated, which
        read 1 - x), base (K, T, S) -> (K, T, S); what ``torch.baddbmm(base, weights, gathered)`` gives."""
        k, t = weights.shape[:2]
        if self.negation:  # w x + v (1 - x) = (w - v) x + v
            half = weights.shape[-1] // 2
            base = base + weights[..., half:].sum(-1, keepdim=True)
            weights = weights[..., :half] - weights[..., half:]
        rows = []
        for i, group in enumerate(self.groups):
            cubes = x.index_select(-1, getattr(self, f"atoms_{i}")).view(k, len(group.columns), -1)
            sums = torch.bmm(weights.index_select(-1, getattr(self, f"columns_{i}")), cubes)  # (K, T, cells)
            rows.append(sums.reshape(k * t, -1).t())
        table = torch.cat(rows)  # (cells of every group, K * T)
        out = _RowSums.apply(table, self.bags, self.members, self.starts)  # (S, K * T)
        return base + out.view(-1, k, t).permute(1, 2, 0)


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
    gathering = len(fuzzy_inputs) * grid.size * (ir.terms + 1)  # the gather, and the product over it
    work = grid_work(groups, sizes, grid.size, ir.terms)
    if gathering < MIN_GATHER_WORK or work > GRID_SHARE * gathering:
        return None
    return ColumnGrid(sizes, grid, groups, ir.negation)


def grid_work(groups: list[CubeGroup], sizes: tuple[int, ...], kept: int, terms: int) -> int:
    """Elements the grid form reads and writes per step and restart: each group's cubes and their sums per
    term, each kept substitution's row of every group, and the result."""
    work = kept * terms * (len(groups) + 1)
    for group in groups:
        cells = math.prod(sizes[v] for v in group.variables)
        work += len(group.columns) * cells + terms * cells
    return work
