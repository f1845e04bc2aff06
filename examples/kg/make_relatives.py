"""Write examples/kg/relatives: a small family knowledge graph in the standard layout (train/valid/test).

Thirty families of three generations, drawn with a fixed seed: parent, spouse and sibling triples are the
graph; grandparent, aunt and uncle triples are spread over train (70%), valid (15%) and test (15%), so that
rules such as ``grandparent(X, Y) :- parent(X, Z), parent(Z, Y)`` can be learned from train and ranked on
test. Run from the repository root: ``python examples/kg/make_relatives.py``.
"""

from __future__ import annotations

import random
from pathlib import Path

OUT = Path(__file__).parent / "relatives"


def family(f: int, rng: random.Random) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """One family's (graph triples, derived triples)."""
    graph, derived = [], []
    gf, gm = f"f{f}_grandpa", f"f{f}_grandma"
    graph += [(gf, "spouse", gm), (gm, "spouse", gf)]
    children = [(f"f{f}_c{i}", rng.choice("mf")) for i in range(rng.randint(2, 4))]
    for child, _ in children:
        graph += [(gf, "parent", child), (gm, "parent", child)]
    for a, _ in children:
        graph += [(a, "sibling", b) for b, _ in children if b != a]
    for i, (child, _) in enumerate(children):
        kids = [f"f{f}_g{i}_{j}" for j in range(rng.randint(0, 3))]
        for kid in kids:
            graph.append((child, "parent", kid))
            derived += [(gf, "grandparent", kid), (gm, "grandparent", kid)]
            for other, other_sex in children:
                if other != child:
                    derived.append((other, "aunt" if other_sex == "f" else "uncle", kid))
        for a in kids:
            graph += [(a, "sibling", b) for b in kids if b != a]
    return graph, derived


def main() -> None:
    rng = random.Random(7)
    graph, derived = [], []
    for f in range(30):
        g, d = family(f, rng)
        graph += g
        derived += d
    rng.shuffle(derived)
    cut1, cut2 = int(0.7 * len(derived)), int(0.85 * len(derived))
    splits = {"train": graph + derived[:cut1], "valid": derived[cut1:cut2], "test": derived[cut2:]}
    OUT.mkdir(exist_ok=True)
    for name, rows in splits.items():
        (OUT / f"{name}.txt").write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in rows))


if __name__ == "__main__":
    main()
