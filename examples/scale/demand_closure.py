"""How many ancestor atoms would demand-driven grounding keep on the bench scale forest?

Examples = the positives plus 2 negatives per positive sampled from the closed world; an atom is demanded
when an example is, or when a kept substitution of a demanded atom reads it. Prints the demanded atoms
after each forward-chaining step (up to the task's T) and the substitutions they keep.

    python examples/scale/demand_closure.py 400
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

from nlndl.bench.scale import forest
from nlndl.compiler import compile_sketch


def main(n: int) -> None:
    sketch, facts, _ = forest(n)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "sketch.dl").write_text(sketch)
        (Path(tmp) / "parent.facts").write_text(facts)
        program = compile_sketch(Path(tmp) / "sketch.dl")
    world = program.worlds[0]
    entry = world.layout["ancestor"]
    lo, hi = entry.offset, entry.offset + entry.size
    gather, ptr = world.gather("ancestor"), world.arrays["ancestor/ptr"]
    slots, labels = world.example_slots, world.example_labels
    positives, negatives = slots[labels > 0.5], slots[labels < 0.5]
    sampled = np.random.default_rng(0).choice(negatives, size=min(negatives.size, 2 * positives.size), replace=False)
    demanded = np.zeros(entry.size, dtype=bool)
    frontier = np.concatenate([positives, sampled]) - lo
    demanded[frontier] = True
    sizes = [int(demanded.sum())]
    for _ in range(program.steps):
        rows = np.concatenate([np.arange(ptr[h], ptr[h + 1]) for h in frontier]) if frontier.size else frontier
        read = gather[rows].ravel()
        read = read[(read >= lo) & (read < hi)] - lo
        frontier = np.unique(read[~demanded[read]])
        demanded[frontier] = True
        sizes.append(int(demanded.sum()))
    kept = int(np.diff(ptr)[demanded].sum())
    print(f"N = {n}: {entry.size:,} ancestor atoms, {sizes[0]:,} examples, T = {program.steps}")
    print(f"demanded after each step: {', '.join(f'{s:,}' for s in sizes)}")
    print(f"substitutions of the demanded atoms: {kept:,} of {gather.shape[0]:,}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
