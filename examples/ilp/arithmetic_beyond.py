"""Whether learned addition and multiplication programs hold past the numbers they were learned on.

``python examples/ilp/arithmetic_beyond.py results.json [--up-to 12]`` reads the runs of an ``nlndl bench ilp
--json`` file, and for each seed runs its learned add rules (and mul rules, on that add) with clingo over
0..N (zero, inc, eq as in the sketches), counting the sums and products up to N derived and any wrong atom.
A program that clingo verified on 0..5 (add) or 0..6 (mul) may still be specific to that domain, e.g.
multiplication as commutativity plus A x 0, A x 1 and A x 2.
"""

from __future__ import annotations

import argparse
import json
import operator
from pathlib import Path

from nlndl.engines import clingo_model


def check(rules: list[str], background: list[str], predicate: str, up_to: int) -> tuple[int, int, int]:
    """(right, expected, wrong) atoms of ``predicate`` derived over 0..up_to."""
    facts = ["zero(0)."] + [f"inc({i},{i + 1})." for i in range(up_to)] + [f"eq({i},{i})." for i in range(up_to + 1)]
    op = operator.add if predicate == "add" else operator.mul
    want = {(a, b, op(a, b)) for a in range(up_to + 1) for b in range(up_to + 1) if op(a, b) <= up_to}
    got = {args for name, args in clingo_model("\n".join(facts + background + rules)) if name == predicate}
    return len(got & want), len(want), len(got - want)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "results", type=Path, help="the JSON of nlndl bench ilp --tasks Addition --tasks Multiplication"
    )
    parser.add_argument("--up-to", type=int, default=12)
    args = parser.parse_args()
    runs = {(r["task"], r["seed"]): r for r in json.loads(args.results.read_text())["runs"]}
    for seed in sorted({seed for _, seed in runs}):
        add, mul = runs.get(("Addition", seed)), runs.get(("Multiplication", seed))
        cells = []
        for name, run, background in (("add", add, []), ("mul", mul, add["rules"] if add else [])):
            if run is None or not run["solved"]:
                cells.append(f"{name}: not solved")
                continue
            right, expected, wrong = check(run["rules"], background, name, args.up_to)
            cells.append(f"{name}: {right}/{expected} right, {wrong} wrong")
        print(f"seed {seed}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
