"""Learning under noise: how many examples of each class an accepted program may get wrong, and the
description length that chooses among the programs within that allowance."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nlndl.compiler.crisp import Rule
from nlndl.compiler.ir import CompiledProgram
from nlndl.verify import Score


def example_counts(program: CompiledProgram) -> dict[bool, int]:
    """The positive (True) and negative (False) examples of every world of ``program``."""
    labels = np.concatenate([w.example_labels for w in program.worlds]) if program.worlds else np.zeros(0)
    positives = int((labels > 0.5).sum())
    return {True: positives, False: int(labels.size) - positives}


@dataclass(frozen=True)
class Allowance:
    """With noise, how many positive examples an accepted program may miss and how many negative ones it may
    derive: the fraction of each class, so that neither deriving nothing nor everything passes on a task
    whose classes differ in size."""

    missed: int = 0
    derived: int = 0

    @classmethod
    def of_counts(cls, counts: dict[bool, int], noise: float) -> Allowance:
        """From the positive (True) and negative (False) examples."""
        if not noise:
            return cls()
        return cls(math.floor(noise * counts[True] + 1e-9), math.floor(noise * counts[False] + 1e-9))

    @classmethod
    def of_score(cls, score: Score, noise: float | None) -> Allowance:
        """From the examples ``score`` counts: on a subgraph's whole worlds, their own share of each class."""
        return cls.of_counts({True: score.positives, False: score.negatives}, noise or 0.0)

    @property
    def total(self) -> int:
        return self.missed + self.derived

    @property
    def worth_scoring(self) -> int:
        """The most mistakes a restart may show before extraction and still be scored: none without noise;
        with it, twice the allowance and two more, since extracting and simplifying may still bring it within."""
        return 2 * self.total + 2 if self.total else 0

    def admits(self, score: Score) -> bool:
        """Whether ``score``'s mistakes of each class are within the allowance; never a score of a program that
        was not checked (whose counts are all 0)."""
        within = score.false_negatives <= self.missed and score.false_positives <= self.derived
        return score.unchecked is None and within


def size(rules: list[Rule]) -> int:
    """Literals of a program: each rule's head and body atoms."""
    return sum(1 + len(r.body) for r in rules)


def cost(score: Score, rules: list[Rule]) -> int:
    """Description length of a program on noisy examples (as Popper's noisy mode scores): the examples it
    gets wrong plus its literals, so a clause that covers a few mislabelled examples does not pay its way."""
    return score.mistakes + size(rules)
