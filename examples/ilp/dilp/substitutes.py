"""Write the Husband and Uncle sketches on our own family tree: dILP never published their data.

The tree (3 generations, 15 people) is ours, of the size of the dILP family tasks. Negatives are
closed-world: every other pair of people. Husband records daughter(Z, Y) for mothers Y only (with
both parents, the published rule would also derive target(F, F) for every father F of a daughter);
Uncle's positives are blood uncles only, as the published rule covers (uncles by marriage are negatives).
Run from the repository root: ``python examples/ilp/dilp/substitutes.py``.
"""

from __future__ import annotations

from itertools import product
from pathlib import Path

HERE = Path(__file__).parent
COUPLES = [("george", "mary"), ("john", "lisa"), ("mark", "anne"), ("peter", "kate")]
CHILDREN = {  # (father, mother) -> children
    ("george", "mary"): ["john", "paul", "anne", "kate"],
    ("john", "lisa"): ["tom", "emma"],
    ("mark", "anne"): ["lucy", "sam"],
    ("peter", "kate"): ["rose", "ben"],
}
MALE = {"george", "john", "paul", "mark", "peter", "tom", "sam", "ben"}
PEOPLE = sorted({p for c in COUPLES for p in c} | {k for ks in CHILDREN.values() for k in ks})


def facts() -> dict[str, set[tuple[str, str]]]:
    father = {(f, k) for (f, _), ks in CHILDREN.items() for k in ks}
    mother = {(m, k) for (_, m), ks in CHILDREN.items() for k in ks}
    daughter = {(k, m) for (_, m), ks in CHILDREN.items() for k in ks if k not in MALE}
    brother = {(a, b) for ks in CHILDREN.values() for a in ks for b in ks if a != b and a in MALE}
    return {"father": father, "mother": mother, "daughter": daughter, "brother": brother}


def sketch(title: str, note: str, background: list[str], positives: set, learn: list[str], extra: list[str]) -> str:
    rel = facts()
    lines = [f"// {title}: SUBSTITUTE DATA, our own family tree (examples/ilp/dilp/substitutes.py).", f"// {note}", ""]
    lines += [f".decl {p}(a0: symbol, a1: symbol)" for p in [*background, *extra, "target"]]
    lines += ["", *learn, ""]
    for p in background:
        lines += [f'{p}("{a}", "{b}").' for a, b in sorted(rel[p])]
    lines += [f'.pos target("{a}", "{b}").' for a, b in sorted(positives)]
    lines += [f'.neg target("{a}", "{b}").' for a, b in product(PEOPLE, PEOPLE) if (a, b) not in positives]
    return "\n".join(lines) + "\n"


def main() -> None:
    rel = facts()
    parent = rel["father"] | rel["mother"]
    husband = set(COUPLES)
    uncle = {(x, y) for x, z in rel["brother"] for p, y in parent if p == z}
    out = {
        "husband": sketch(
            "Family Tree/Husband (dILP G.11)",
            "Published rule: target(X,Y) :- father(X,Z), daughter(Z,Y). Bias: target with 3 variables.",
            ["father", "daughter", "brother"],
            husband,
            [".learn target(vars=3)"],
            [],
        ),
        "uncle": sketch(
            "Family Tree/Uncle (dILP G.12)",
            "Published rule: target(X,Y) :- brother(X,Z), pred1(Z,Y); pred1 = father or mother (invented).",
            ["father", "mother", "brother"],
            uncle,
            [".learn pred1(vars=2, invented)", ".learn target(vars=3)"],
            ["pred1"],
        ),
    }
    for name, text in out.items():
        path = HERE / name / "sketch.dl"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(HERE)}")


if __name__ == "__main__":
    main()
