"""Validation examples held out of training: a fraction of each world's examples, drawn with the seed.

The held-out atoms leave the training examples and become unknown to training and to its checks (in a
closed world too: a held-out atom is neither a positive nor one of the complement's negatives), and the
learned rules are scored on them afterwards (``verify.validation_score``). Torch-free.
"""

from __future__ import annotations

import copy

import numpy as np

from nlndl.compiler.ir import CompiledProgram
from nlndl.defaults import MAX_NOISE

HELD_SLOTS, HELD_LABELS = "holdout/slots", "holdout/labels"


def held_out(fraction: float, count: int) -> int:
    """How many of a class of ``count`` examples are held out: the fraction, rounded down."""
    return int(fraction * count + 1e-9)


def held_counts(program: CompiledProgram, fraction: float) -> tuple[int, int]:
    """The positive and negative examples :func:`hold_out` would hold out of ``program`` at ``fraction``."""
    positives = negatives = 0
    for world in program.worlds:
        labels = world.example_labels
        positives += held_out(fraction, int((labels > 0.5).sum()))
        negatives += held_out(fraction, int((labels <= 0.5).sum()))
    return positives, negatives


def hold_out(program: CompiledProgram, fraction: float, seed: int) -> tuple[CompiledProgram, int]:
    """A copy of ``program`` with, in each world, floor(fraction x positives) positive examples and
    floor(fraction x negatives) negative ones moved to ``holdout/slots`` and ``holdout/labels``; the count
    held out. ValueError where it cannot be: a fraction outside (0, 0.5], or a program trained on subgraphs
    (their whole worlds, which judge acceptance, hold every example)."""
    if not 0 < fraction <= MAX_NOISE:
        raise ValueError(f"validation fraction must be above 0 and at most {MAX_NOISE}, got {fraction:g}")
    if program.whole:
        raise ValueError("validation examples cannot be held out of a program trained on subgraphs")
    split = copy.copy(program)
    split.worlds = []
    held = 0
    rng = np.random.default_rng([seed, 13])
    for world in program.worlds:
        labels = world.example_labels
        chosen = []
        for cls in (np.flatnonzero(labels > 0.5), np.flatnonzero(labels <= 0.5)):
            chosen.append(rng.choice(cls, held_out(fraction, cls.size), replace=False))
        out = np.zeros(labels.size, dtype=bool)
        out[np.concatenate(chosen).astype(np.int64)] = True
        held += int(out.sum())
        changed = copy.copy(world)
        changed.arrays = {
            **world.arrays,
            "examples/slots": world.example_slots[~out],
            "examples/labels": labels[~out],
            HELD_SLOTS: world.example_slots[out],
            HELD_LABELS: labels[out],
        }
        split.worlds.append(changed)
    return split, held
