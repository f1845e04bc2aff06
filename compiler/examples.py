"""Example atoms of a world, as grid indices per learned predicate, with their 0/1 labels.

A closed-world predicate (``.closed p``) has every atom that is no example as a negative one; with
``.closed p(sample=K)`` only K per positive example, drawn uniformly with the seed, so that training does
not materialise the complement. Verification never samples (it reads the closed predicates off the program).
"""

from __future__ import annotations

import numpy as np

from nlndl.compiler.diagnostics import Diagnostics, Span
from nlndl.compiler.join import member

Example = tuple[str, tuple[int, ...], bool, Span]  # predicate, constant ids, positive, where


def given(
    examples: list[Example],
    positions: dict[str, dict[int, int]],
    types: dict[str, tuple[str, ...]],
    shapes: dict[str, tuple[int, ...]],
    diags: Diagnostics,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per predicate the sorted grid indices of its .pos/.neg examples and their labels; a contradiction
    (the same atom positive and negative) is a located error."""
    labels: dict[str, dict[int, tuple[bool, Span]]] = {}
    for name, args, positive, span in examples:
        pos = tuple(positions[t][c] for t, c in zip(types[name], args, strict=True))
        flat = int(np.ravel_multi_index(pos, shapes[name])) if pos else 0
        seen = labels.setdefault(name, {})
        if flat in seen and seen[flat][0] != positive:
            diags.error(span, f"example contradicts the one at {seen[flat][1]}")
        seen[flat] = (positive, span)
    out = {}
    for name, seen in labels.items():
        flat = np.array(sorted(seen), dtype=np.int64)
        out[name] = (flat, np.array([seen[int(f)][0] for f in flat], dtype=np.float32))
    return out


def sample_negatives(grid: int, taken: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` distinct grid indices in [0, grid) outside the sorted ``taken``, uniformly drawn; all of
    them where there are no more. Sorted."""
    free = grid - taken.size
    if count >= free:
        return np.setdiff1d(np.arange(grid, dtype=np.int64), taken, assume_unique=True)
    if 2 * count >= free:  # a dense complement: choose among it
        rest = np.setdiff1d(np.arange(grid, dtype=np.int64), taken, assume_unique=True)
        return np.sort(rng.choice(rest, size=count, replace=False))
    chosen = np.zeros(0, dtype=np.int64)
    while chosen.size < count:
        draw = rng.integers(0, grid, size=2 * (count - chosen.size) + 16, dtype=np.int64)
        draw = draw[~member(draw, taken)]
        pool = np.concatenate([chosen, draw])
        _, first = np.unique(pool, return_index=True)
        chosen = pool[np.sort(first)][:count]  # distinct, in the order drawn: the seed decides which
    return np.sort(chosen)


def labelled(
    given_atoms: dict[str, tuple[np.ndarray, np.ndarray]],
    closed: set[str],
    samples: dict[str, int],
    grids: dict[str, int],
    rng: np.random.Generator,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The examples with each closed predicate's negatives added: every other atom of its grid, or K per
    positive example under ``samples``. Per predicate, sorted grid indices and labels."""
    out = dict(given_atoms)
    for name in sorted(closed):
        flat, labels = given_atoms.get(name, (np.zeros(0, np.int64), np.zeros(0, np.float32)))
        grid = grids[name]
        if name in samples:
            negatives = sample_negatives(grid, flat, samples[name] * int((labels > 0.5).sum()), rng)
        else:
            negatives = np.setdiff1d(np.arange(grid, dtype=np.int64), flat, assume_unique=True)
        keys = np.concatenate([flat, negatives])
        order = np.argsort(keys, kind="stable")
        out[name] = (keys[order], np.concatenate([labels, np.zeros(negatives.size, np.float32)])[order])
    return out


def share(
    labelled: dict[str, tuple[np.ndarray, np.ndarray]], rank: int, size: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Shard ``rank`` of ``size`` of the examples: of each predicate every ``size``-th positive and every
    ``size``-th negative from the ``rank``-th on, so that each shard holds its part of both classes."""
    out = {}
    for name, (flat, labels) in labelled.items():
        positive = labels > 0.5
        keep = np.zeros(flat.size, dtype=bool)
        for mask in (positive, ~positive):
            keep[np.flatnonzero(mask)[rank::size]] = True
        out[name] = (flat[keep], labels[keep])
    return out


def closed_atoms(closed: set[str], samples: dict[str, int], given_atoms: dict, grids: dict[str, int]) -> int:
    """How many example atoms the closed predicates would add, exactly, before any is drawn."""
    total = 0
    for name in closed:
        flat, labels = given_atoms.get(name, (np.zeros(0), np.zeros(0)))
        free = grids[name] - flat.size
        total += min(free, samples[name] * int((labels > 0.5).sum())) if name in samples else free
    return total


def unlabel(
    labelled: dict[str, tuple[np.ndarray, np.ndarray]],
    types: dict[str, tuple[str, ...]],
    domains: dict[str, list[int]],
    unlabelled: frozenset[int],
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, np.ndarray]]:
    """The examples over none of the ``unlabelled`` constants, and per predicate the grid indices of those
    over one or more (a subgraph's, see compiler.subgraph.cut_short): neither positive nor negative there."""
    if not unlabelled:
        return labelled, {}
    marked = np.array(sorted(unlabelled), dtype=np.int64)
    kept, aside = {}, {}
    for name, (flat, labels) in labelled.items():
        shape = tuple(len(domains[t]) for t in types[name])
        over = np.zeros(flat.size, dtype=bool)
        for t, position in zip(types[name], np.unravel_index(flat, shape), strict=True):
            over |= np.isin(np.asarray(domains[t], dtype=np.int64)[position], marked)
        kept[name] = (flat[~over], labels[~over])
        if over.any():
            aside[name] = flat[over]
    return kept, aside
