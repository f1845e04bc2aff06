"""A knowledge graph of many relations or with hubs: the relations a clause body reads are the ones whose short
paths tell the positives from corrupted triples, and a relation past the index budget is learned under
prune=path (a third variable only where it joins head and tail) from as many positives as the budget holds."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from nlndl.compiler import compile_sketch
from nlndl.compiler.diagnostics import Diagnostics
from nlndl.compiler.triples import body_relations, kg_sketch, path_scores
from nlndl.kg_rules import Graph, KGConfig, learn_relation


def families(directory: Path, noise: int = 6, hub: bool = False) -> Path:
    """aunt = sister of a parent over twelve families, beside ``noise`` relations of random pairs; with ``hub``,
    every person also ``lives_in`` one town (an entity next to everyone)."""
    rng = np.random.default_rng(5)
    people: list[str] = []
    train, test = [], []
    for f in range(12):
        mother, sister, kids = f"m{f}", f"s{f}", [f"k{f}a", f"k{f}b"]
        people += [mother, sister, *kids]
        train += [f"{mother}\tsister\t{sister}", f"{sister}\tsister\t{mother}"]
        train += [f"{mother}\tparent\t{k}" for k in kids]
        (train if f < 10 else test).extend(f"{sister}\taunt\t{k}" for k in kids)
    for n in range(noise):
        for _ in range(20):
            a, b = rng.choice(len(people), 2, replace=False)
            train.append(f"{people[a]}\tnoise{n}\t{people[b]}")
    if hub:
        train += [f"{p}\tlives_in\ttown" for p in people]
    directory.mkdir(parents=True)
    (directory / "train.txt").write_text("".join(r + "\n" for r in train))
    (directory / "test.txt").write_text("".join(r + "\n" for r in test))
    return directory


def body_of(text: str) -> list[str]:
    return re.search(r"body=\[([^\]]*)\]", text).group(1).split(", ")


def test_the_body_keeps_the_relations_whose_paths_tell_positives_from_negatives(tmp_path):
    directory = families(tmp_path / "kg")
    made = kg_sketch(directory, "aunt", Diagnostics(), max_body=3, max_entries=10_000)
    assert made is not None
    body = body_of(made.text)
    assert len(body) == 3 and {"sister", "parent"} <= set(body)
    assert "// body: the 3 of 9 relations" in made.text
    assert set(made.facts) == set(body)  # only the relations read are written
    for body in (None, 3):  # within the index budget: every relation, whatever max_body says
        within = kg_sketch(directory, "aunt", Diagnostics(), **({"max_body": body} if body else {}))
        assert len(body_of(within.text)) == 9 and "// body:" not in within.text


def test_path_scores_rank_a_joining_relation_above_one_that_joins_nothing():
    background = {"sister": [("s", "m")], "parent": [("m", "k")], "other": [("x", "y")]}
    scores = path_scores(background, [("s", "k")], [("x", "k")])
    assert scores["sister"] == scores["parent"] == 1.0 and scores["other"] <= 0
    assert body_relations(background, [("s", "k")], [("x", "k")], 2) == ["sister", "parent"]
    assert body_relations(background, [("s", "k")], [("x", "k")], None) == list(background)


def test_a_relation_past_the_budget_is_learned_under_path_pruning(tmp_path):
    directory = families(tmp_path / "kg", noise=0, hub=True)
    whole = kg_sketch(directory, "aunt", Diagnostics())
    assert "prune=path" not in whole.text
    made = kg_sketch(directory, "aunt", Diagnostics(), max_entries=27 * 40)
    assert made is not None and "prune=path" in made.text
    assert 1 <= made.positives < whole.positives
    assert f"positives: {made.positives} of the {whole.positives}" in made.text
    # the town joins everyone to one side only: path pruning keeps it out of every substitution
    sketch = tmp_path / "s.dl"
    sketch.write_text(made.text)
    for name, text in made.facts.items():
        (tmp_path / f"{name}.facts").write_text(text)
    kept = compile_sketch(sketch).worlds[0].substitutions["aunt"]
    sketch.write_text(made.text.replace(", prune=path", ""))
    assert kept < compile_sketch(sketch).worlds[0].substitutions["aunt"]
    graph = Graph.read(directory)
    config = KGConfig(time_limit=60, max_iters=2000, pool_patience=100, entries=27 * 40)
    learned = learn_relation(directory, graph, "aunt", config)
    best, confidence = learned.clauses[0]  # derived: the 20 known aunts and the 4 of the test split
    assert {a.predicate for a in best.body} == {"sister", "parent"} and confidence == 20 / 24


def test_the_baseline_multiplies_only_the_paths_that_join_a_known_pair():
    from scipy import sparse

    from nlndl.paths import Edges, atom_matrices, two_atom_paths

    rng = np.random.default_rng(3)
    n = 30

    def relation(edges: int) -> sparse.csr_matrix:
        h, t = rng.integers(n, size=(2, edges))
        return sparse.csr_matrix((np.ones(edges, dtype=np.float32), (h, t)), shape=(n, n))

    atoms = [m for _, m in atom_matrices({name: relation(int(rng.integers(1, 40))) for name in "pqs"})]
    known = relation(25)
    heads, tails = (np.asarray(x, np.int64) for x in known.nonzero())
    found = two_atom_paths(Edges(atoms, n), heads, tails)
    brute = {
        (i, j) for i, a in enumerate(atoms) for j, b in enumerate(atoms) if (a @ b).multiply(known).count_nonzero()
    }
    assert found == brute and 0 < len(found) < 36


def test_the_counted_substitutions_are_the_compilers(tmp_path):
    """third_values counts, before compiling, what pruning keeps: each example's third-variable values, and
    its first constant once more where that is a value already (an upper bound by at most one per example)."""
    from nlndl.compiler.triples import third_values

    directory = families(tmp_path / "kg", noise=3, hub=True)
    for path in (False, True):
        made = kg_sketch(directory, "aunt", Diagnostics(), max_entries=None)
        text = made.text.replace("])", "], prune=path)") if path else made.text
        sketch = tmp_path / f"{path}.dl"
        sketch.write_text(text)
        for name, rows in made.facts.items():
            (tmp_path / f"{name}.facts").write_text(rows)
        kept = compile_sketch(sketch).worlds[0].substitutions["aunt"]
        background = {r: [tuple(line.split("\t")) for line in rows.splitlines()] for r, rows in made.facts.items()}
        examples = re.findall(r'^\.(?:pos|neg) aunt\("([^"]*)", "([^"]*)"\)', text, re.M)
        counted = int(third_values(background, examples, path).sum())
        assert kept <= counted <= kept + len(examples)
