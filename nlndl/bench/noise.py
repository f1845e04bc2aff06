"""Noise benchmark: bundled tasks with a fraction of their labels flipped, learned with ``--noise``.

For each task, level and seed: the compiled task's example labels, a fraction ``level`` of its positive
examples made negative and as many negative ones made positive (drawn with the seed, in memory: the
sketch is not rewritten), trained with ``noise=level``; the run counts as correct when clingo finds the
learned rules right on every *clean* label.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nlndl import api
from nlndl.compiler.ir import CompiledProgram
from nlndl.verify import clingo_score

TASKS = (
    "grandparent",
    "less_than",
    "dilp/connectedness",
    "dilp/son",
    "dilp/undirected_edge",
    "dilp/member",
)
LEVELS = (0.0, 0.05, 0.1, 0.2, 0.3)


def flip(program: CompiledProgram, level: float, seed: int) -> tuple[CompiledProgram, int]:
    """A copy of ``program`` whose labels are flipped: in each world floor(level x positives) positive
    examples and as many negative ones, drawn with ``seed``. Returns it and how many labels were flipped."""
    noisy = copy.copy(program)
    noisy.worlds = []
    flipped = 0
    rng = np.random.default_rng([seed, 7])
    for world in program.worlds:
        labels = world.example_labels.copy()
        pos, neg = np.flatnonzero(labels > 0.5), np.flatnonzero(labels <= 0.5)
        count = min(int(level * pos.size + 1e-9), neg.size)
        labels[rng.choice(pos, count, replace=False)] = 0.0
        labels[rng.choice(neg, count, replace=False)] = 1.0
        flipped += 2 * count
        changed = copy.copy(world)
        changed.arrays = {**world.arrays, "examples/labels": labels}
        noisy.worlds.append(changed)
    return noisy, flipped


def run(
    examples: Path,
    tasks: tuple[str, ...] = TASKS,
    levels: tuple[float, ...] = LEVELS,
    seeds: int = 10,
    time_limit: float = 60.0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every task x level x seed; per run whether its rules are right on the clean labels."""
    runs = []
    for task in tasks:
        clean = api.compile(examples / task / "sketch.dl")
        for level in levels:
            for seed in range(seeds):
                if progress:
                    progress(f"{task} noise {level:g} seed {seed}")
                noisy, flipped = flip(clean, level, seed)
                start = time.perf_counter()
                result = api.train(noisy, seed=seed, time_limit=time_limit, noise=level or None)
                right = clingo_score(clean, result.rules)
                runs.append(
                    {
                        "task": task,
                        "noise": level,
                        "seed": seed,
                        "flipped": flipped,
                        "accepted": result.accepted,
                        "correct": right.solved,
                        "seconds": round(time.perf_counter() - start, 2),
                        "iterations": result.iterations,
                        "rules": result.rule_texts(),
                        "noisy_mistakes": result.score.mistakes,
                    }
                )
    table = {}
    for level in levels:
        at = [r for r in runs if r["noise"] == level]
        table[f"{level:g}"] = sum(r["correct"] for r in at) / max(len(at), 1)
    return {"seeds": seeds, "time_limit": time_limit, "correct_fraction": table, "runs": runs}


def markdown(report: dict[str, Any]) -> str:
    """Per task and level: runs right on the clean labels of those run, and the labels flipped per run."""
    levels = sorted({r["noise"] for r in report["runs"]})
    tasks = list(dict.fromkeys(r["task"] for r in report["runs"]))
    lines = [
        "| task | " + " | ".join(f"noise {level:g}" for level in levels) + " |",
        "|---" * (len(levels) + 1) + "|",
    ]
    for task in tasks:
        cells = []
        for level in levels:
            at = [r for r in report["runs"] if r["task"] == task and r["noise"] == level]
            flipped = sorted({r["flipped"] for r in at})
            cells.append(f"{sum(r['correct'] for r in at)}/{len(at)} ({'/'.join(map(str, flipped))} flipped)")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    fractions = [f"{report['correct_fraction'][f'{level:g}']:.0%}" for level in levels]
    lines.append("| all | " + " | ".join(fractions) + " |")
    return "\n".join(lines)
