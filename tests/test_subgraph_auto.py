"""--subgraph auto and counterexample-grown subgraphs: small worlds are trained whole, a large one on a
subgraph, and rules that fit the subgraph but not the whole world grow it until they hold there."""

import json
import random
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nlndl import api
from nlndl.cli import app
from nlndl.compiler import compile_sketch, ground_sketch
from nlndl.compiler.subgraph import GROW_GRID, GROW_NEIGHBOURS, auto_choice, auto_entities, unpruned
from nlndl.datalog import render
from nlndl.defaults import (
    SUBGRAPH_ABOVE,
    SUBGRAPH_DEEP,
    SUBGRAPH_ENTRIES,
    SUBGRAPH_GRID,
    SUBGRAPH_MIN,
    SUBGRAPH_MOST,
    SUBGRAPH_TRY,
    SUBGRAPH_WORK,
)
from nlndl.verify import clingo_score

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "ilp"


@pytest.fixture(scope="module")
def two_trees(tmp_path_factory) -> Path:
    """Two random trees of 100 nodes, not connected: every node of the first is red, none of the second;
    ``t`` holds of the edges into red nodes (a closed world). A subgraph drawn around the positives sees the
    first tree only, where ``t(A, B) :- edge(A, B)`` fits; the second tree refutes it."""
    rng = random.Random(0)
    edges = [(f"{c}{rng.randrange(i)}", f"{c}{i}") for c in "ab" for i in range(1, 100)]
    red = [f"a{i}" for i in range(100)]
    root = tmp_path_factory.mktemp("two_trees")
    (root / "edge.facts").write_text("".join(f"{x}\t{y}\n" for x, y in edges))
    (root / "red.facts").write_text("".join(f"{x}\n" for x in red))
    lines = [".decl edge(a: symbol, b: symbol)", ".input edge", ".decl red(a: symbol)", ".input red"]
    lines += [".decl t(a: symbol, b: symbol)", ".learn t(vars=3, body=[edge, red])", ".closed t"]
    lines += [f'.pos t("{x}", "{y}").' for x, y in edges if x.startswith("a")]
    (root / "sketch.dl").write_text("\n".join(lines) + "\n")
    return root / "sketch.dl"


def test_auto_trains_every_bundled_task_on_its_whole_worlds():
    sketches = sorted(EXAMPLES.glob("**/sketch.dl"))
    assert len(sketches) >= 36
    for sketch in sketches:
        grounded = ground_sketch(sketch)
        assert max(unpruned(grounded.checked, w) for w in grounded.worlds) <= SUBGRAPH_ABOVE, sketch
        assert max(unpruned(grounded.checked, w, weighed=True) for w in grounded.worlds) <= SUBGRAPH_WORK, sketch
        assert auto_choice(grounded.checked, grounded.worlds) == "whole"
    assert not compile_sketch(EXAMPLES / "sorting" / "sketch.dl", subgraph="auto").whole


def test_auto_samples_a_large_world_down_to_the_grid_it_aims_at(two_trees):
    grounded = ground_sketch(two_trees)
    assert unpruned(grounded.checked, grounded.worlds[0]) == 200**3
    assert SUBGRAPH_ABOVE < 200**3 <= SUBGRAPH_TRY and auto_choice(grounded.checked, grounded.worlds) == "try"
    assert auto_entities(grounded.checked) == round(SUBGRAPH_GRID ** (1 / 3)) == 64
    (whole,) = compile_sketch(two_trees, subgraph="auto").whole
    assert (whole.sampled, whole.entities) == (64, 200)
    assert not compile_sketch(two_trees, subgraph=None).whole


def test_auto_samples_two_variables_down_to_as_many_constants_as_three(tmp_path):
    """mother(A, B) over 3,000 people: the grid alone would allow 512 constants (262,144 substitutions, whose
    iterations took 7.8 s each: not solved in 120 s); SUBGRAPH_MOST keeps it to 64, where it is learned."""
    people = [f"p{i}" for i in range(3000)]
    lines = [".decl parent(a: symbol, b: symbol)", ".decl female(a: symbol)", ".decl mother(a: symbol, b: symbol)"]
    lines += [f'parent("{people[i // 2]}", "{p}").' for i, p in enumerate(people) if i]
    lines += [f'female("{p}").' for p in people[::2]]
    lines += [".learn mother(vars=2)", ".closed mother"]
    lines += [f'.pos mother("{people[i // 2]}", "{p}").' for i, p in enumerate(people) if i and (i // 2) % 2 == 0]
    (tmp_path / "sketch.dl").write_text("\n".join(lines) + "\n")
    grounded = ground_sketch(tmp_path / "sketch.dl")
    assert round(SUBGRAPH_GRID ** (1 / 2)) == 512 and auto_entities(grounded.checked) == SUBGRAPH_MOST == 64
    result = api.train(tmp_path / "sketch.dl")
    assert result.solved and [render(r) for r in result.rules] == ["mother(A, B) :- parent(A, B), female(A)."]


def test_auto_weighs_substitutions_by_their_candidate_atoms(tmp_path):
    """Four variables over 30 people: 810,000 unpruned substitutions, below SUBGRAPH_ABOVE, but with 51
    candidate atoms each more index entries than SUBGRAPH_WORK: the whole world is lowered and measured
    ("try"), and the subgraph is cut to fewer constants than the grid alone would give."""
    people = [f"p{i}" for i in range(30)]
    lines = [
        ".decl parent(a: symbol, b: symbol)",
        ".decl sibling(a: symbol, b: symbol)",
        ".decl male(a: symbol)",
        ".decl uncle(a: symbol, b: symbol)",
        ".learn uncle(vars=4)",
        ".closed uncle",
    ]
    lines += [f'parent("{people[i // 2]}", "{p}").' for i, p in enumerate(people) if i]
    lines += [f'male("{p}").' for p in people[::2]]
    lines += [f'sibling("{people[i]}", "{people[i + 1]}").' for i in range(1, 29, 2)]
    lines += ['.pos uncle("p3", "p4").']
    (tmp_path / "sketch.dl").write_text("\n".join(lines) + "\n")
    grounded = ground_sketch(tmp_path / "sketch.dl")
    world = grounded.worlds[0]
    assert unpruned(grounded.checked, world) == 30**4 <= SUBGRAPH_ABOVE
    assert unpruned(grounded.checked, world, weighed=True) == 51 * 30**4 > SUBGRAPH_WORK
    assert auto_choice(grounded.checked, grounded.worlds) == "try"
    entities = auto_entities(grounded.checked)
    assert entities == round((SUBGRAPH_ENTRIES / 51) ** (1 / 4)) == 20 < round(SUBGRAPH_GRID ** (1 / 4))


def test_auto_counts_every_head_of_a_learned_predicate_that_a_learned_body_reads(tmp_path):
    """A recursive predicate with examples only: its substitutions are demanded beyond its examples (each
    reads the predicate at other atoms), so the estimate counts every head atom, as of a closed one: 200
    people, 8,000,000 substitutions, not the 240 examples' 48,000."""
    people = [f"p{i}" for i in range(200)]
    lines = [".decl parent(a: symbol, b: symbol)", ".decl gp(a: symbol, b: symbol)", ".learn gp(vars=3)"]
    lines += [f'parent("{people[i // 2]}", "{p}").' for i, p in enumerate(people) if i]
    lines += [f'.pos gp("{people[i // 4]}", "{people[i]}").' for i in range(4, 124)]
    lines += [f'.neg gp("{people[i]}", "{people[i // 4]}").' for i in range(4, 124)]
    (tmp_path / "sketch.dl").write_text("\n".join(lines) + "\n")
    grounded = ground_sketch(tmp_path / "sketch.dl")
    assert unpruned(grounded.checked, grounded.worlds[0]) == 200**3 > SUBGRAPH_ABOVE
    assert auto_choice(grounded.checked, grounded.worlds) == "try"
    (tmp_path / "sketch.dl").write_text("\n".join(lines).replace("vars=3)", "vars=3, body=[parent])") + "\n")
    grounded = ground_sketch(tmp_path / "sketch.dl")  # not recursive: its examples alone
    assert (
        unpruned(grounded.checked, grounded.worlds[0]) == 240 * 200
        and auto_choice(grounded.checked, grounded.worlds) == "whole"
    )


def test_auto_never_enumerates_candidate_atoms_that_lowering_refuses(tmp_path, monkeypatch):
    """32 variables over a quaternary relation: over a million candidate atoms, which lowering refuses before
    enumerating them; auto sizes its subgraph by their bound instead of listing them."""
    import nlndl.compiler.subgraph as subgraph

    (tmp_path / "s.dl").write_text(
        ".decl e(a: symbol, b: symbol, c: symbol, d: symbol)\ne(a, b, c, d).\n"
        ".decl p(x: symbol, y: symbol)\n.learn p(vars=32)\n.pos p(a, b).\n"
    )
    grounded = ground_sketch(tmp_path / "s.dl")
    (spec,) = grounded.checked.learned.values()

    def refused(*args):
        raise AssertionError("candidate atoms enumerated")

    monkeypatch.setattr(subgraph, "input_list", refused)
    assert subgraph.candidate_atoms(spec, grounded.checked) == 1_049_600
    assert auto_choice(grounded.checked, grounded.worlds) == "sample"  # 4^30 unpruned substitutions
    assert auto_entities(grounded.checked) == SUBGRAPH_MIN


def test_auto_keeps_a_sparse_world_whole_when_joins_prune_it(tmp_path):
    """A chain of 2,000 nodes with 3,000 listed examples: 6 million unpruned substitutions, but the joins keep
    only those whose extra variable is a neighbour, so the world lowered whole is cheap and stays whole
    (as a relation written by nlndl kg sketch does)."""
    n = 2000
    (tmp_path / "edge.facts").write_text("".join(f"n{i}\tn{i + 1}\n" for i in range(n - 1)))
    lines = [
        ".decl edge(a: symbol, b: symbol)",
        ".input edge",
        ".decl t(a: symbol, b: symbol)",
        ".learn t(body=[edge])",
    ]
    lines += [f'.pos t("n{i}", "n{i + 1}").' for i in range(0, 1500)]
    lines += [f'.neg t("n{i}", "n{i + 2}").' for i in range(0, 1500)]
    (tmp_path / "sketch.dl").write_text("\n".join(lines) + "\n")
    grounded = ground_sketch(tmp_path / "sketch.dl")
    assert unpruned(grounded.checked, grounded.worlds[0]) == 3000 * n > SUBGRAPH_ABOVE
    assert auto_choice(grounded.checked, grounded.worlds) == "try"
    program = grounded.lower(subgraph="auto")
    assert not program.whole and program.summary()["index_entries"] * program.steps <= SUBGRAPH_WORK


def test_a_subgraph_grows_by_the_counterexamples_constants_and_their_paths(two_trees):
    grounded = ground_sketch(two_trees)
    grounded.lower(subgraph="auto")
    (kept,) = grounded.chosen
    b0, b5 = (grounded.symbols.intern(name) for name in ("b0", "b5"))
    assert not {b0, b5} & kept, "the drawn subgraph lies in the first tree"
    edges = grounded.worlds[0].db["edge"]
    path, at = [b5], b5
    while at != b0:  # b5's ancestors up to the root b0
        at = next(x for x, y in edges if y == at)
        path.append(at)
    program = grounded.grow([[("t", (b0, b5))]])
    (grown,) = grounded.chosen
    assert program is not None and kept < grown and set(path) <= grown
    assert program.whole[0].sampled <= len(grown) <= len(kept) + len(path) * (GROW_NEIGHBOURS + 1)


def test_a_subgraph_grows_its_grid_by_at_most_grow_grid_past_the_first_counterexample(two_trees):
    """Every edge of the second tree asked for at once (each two adjacent constants, so any one comes in whole
    within the bound): the grid (constants ** 3 here) grows at most GROW_GRID-fold, and the next step grows
    it again."""
    grounded = ground_sketch(two_trees)
    grounded.lower(subgraph="auto")
    (kept,) = grounded.chosen
    edges = [(x, y) for x, y in grounded.worlds[0].db["edge"] if str(grounded.symbols.value(x)).startswith("b")]
    assert len(edges) == 99
    grounded.grow([[("t", edge) for edge in edges]])
    (grown,) = grounded.chosen
    assert len(kept) < len(grown) and len(grown) ** 3 <= GROW_GRID * len(kept) ** 3
    assert grounded.grow([[("t", edge) for edge in edges]]) is not None
    assert len(grown) < len(grounded.chosen[0]) and len(grounded.chosen[0]) ** 3 <= GROW_GRID * len(grown) ** 3


def test_under_noise_rules_beyond_the_whole_worlds_allowance_grow_the_subgraph_too(two_trees):
    """With --noise, rules within the subgraph's allowance are judged by the whole worlds' own share of each
    class (not the subgraph's), and grow it where they pass it: t(A, B) :- edge(A, B) derives the second
    tree's 99 edges, far past 10% of its negatives."""
    result = api.train(two_trees, seed=0, max_iters=400, noise=0.1)
    assert result.accepted and result.grown >= 1, result.rule_texts()
    whole = clingo_score(compile_sketch(two_trees, subgraph="auto"), result.rules, whole=True)
    assert whole.false_negatives <= 0.1 * whole.positives and whole.false_positives <= 0.1 * whole.negatives


def test_rules_that_fit_the_subgraph_only_grow_it_until_they_hold_on_the_whole_world(two_trees, tmp_path):
    """What the CLI says of the subgraph auto chose and grew; the rules it ends with hold on the whole world, as
    clingo checks them (`nlndl check`); --subgraph none keeps the whole world."""
    out = tmp_path / "out"
    done = runner.invoke(app, ["train", str(two_trees), "-D", str(out), "--max-iters", "400"])
    assert done.exit_code == 0, done.output
    assert "--subgraph auto" in done.output and "64 of 200 constants" in done.output
    assert "the subgraph grew from counterexamples" in done.output
    assert "the rules fail on the whole world (" in done.output and "subgraph grown, 64 -> " in done.output
    record = json.loads((out / "t.json").read_text())
    assert record["subgraph"] == "auto" and record["accuracy"]["solved"] and record["solved"]
    assert record["subgraph_grown"] >= 1 and record["subgraph_constants"][0] > 64
    checked = runner.invoke(app, ["check", str(out / "t.dl"), str(two_trees)])
    assert checked.exit_code == 0 and "99/99 positive examples entailed, 0/39901 negative" in checked.output
    exported = runner.invoke(app, ["export", str(out / "t.json")])
    assert exported.exit_code == 0 and "t(A, B)" in exported.output
    compiled = runner.invoke(app, ["compile", str(two_trees), "--subgraph", "none"])
    assert compiled.exit_code == 0 and "constants" not in compiled.output
    for bad in ("some", "1"):
        refused = runner.invoke(app, ["compile", str(two_trees), "--subgraph", bad])
        assert refused.exit_code == 2 and "--subgraph" in refused.output


def chain_sketch(root: Path, n: int = 12) -> Path:
    """``t(X, Y)``: Y two edges after X along a chain of ``n`` nodes (a closed world)."""
    lines = [".decl edge(a: symbol, b: symbol)", ".decl t(a: symbol, b: symbol)", ".learn t(vars=3, body=[edge])"]
    lines += [f'edge("n{i}", "n{i + 1}").' for i in range(n - 1)] + [".closed t"]
    lines += [f'.pos t("n{i}", "n{i + 2}").' for i in range(n - 2)]
    (root / "sketch.dl").write_text("\n".join(lines) + "\n")
    return root / "sketch.dl"


def stalled_subgraph(root: Path, kept: list[str]):
    """The chain's program trained on the subgraph of ``kept`` constants, with its settings as nlndl train
    would give them (grown from counterexamples)."""
    from nlndl.jobs.ilp import training_config

    grounded = ground_sketch(chain_sketch(root))
    program = grounded.lower(grown=[{grounded.symbols.intern(c) for c in kept}])
    config, _ = training_config(program, seed=0, max_iters=2000, grow=grounded.grow)
    return program, config


def test_rules_that_miss_only_what_a_subgraph_cuts_end_the_run_right_on_the_whole_world(tmp_path):
    """n3 is left out, so the subgraph holds t(n2, n4) and t(n1, n3)'s ends but no facts that derive them: no
    rule fits it. The two-edge rule misses only those positives there, so it is judged on the whole world as
    soon as it is the best, and holds there: the result, without growing the subgraph and long before
    train.patience iterations without better rules would have it judged there."""
    from nlndl.learn import learn

    program, config = stalled_subgraph(tmp_path, ["n0", "n1", "n2", "n4", "n5", "n6"])
    assert program.whole[0].sampled == 6
    result = learn(program, config)
    assert result.solved and result.grown == 0, result.rule_texts()
    assert result.iterations < config.train.patience
    assert result.rule_texts() == ["t(A, B) :- edge(A, C), edge(C, B)."]


def test_training_stalled_on_a_subgraph_grows_it_from_the_best_rules_counterexamples(tmp_path):
    """Every other node: the subgraph holds positives and no edge at all, so nothing can be learned there and
    the best rules miss every positive of the whole world; their counterexamples grow the subgraph by the
    nodes between, where the two-edge rule is learned."""
    from nlndl.learn import learn

    program, config = stalled_subgraph(tmp_path, ["n0", "n2", "n4", "n6"])
    said: list[str] = []
    result = learn(program, config, notify=said.append)
    assert result.solved and result.grown >= 1, result.rule_texts()
    assert len(said) == result.grown and "subgraph grown, 4 -> " in said[0] and " of 12 constants" in said[0]
    assert result.trained_on[0] > 4 and result.rule_texts() == ["t(A, B) :- edge(A, C), edge(C, B)."]


def test_a_run_that_ends_unsolved_after_growing_reports_the_best_rules_of_any_subgraph(tmp_path):
    """Stopped at the iteration where the subgraph grew, the run has trained nothing on the grown one: it
    reports the rules whose counterexamples grew it (judged on the whole world), not the grown trainer's
    untrained first restart, where those get fewer examples right."""
    from dataclasses import replace

    from nlndl.learn import learn

    program, config = stalled_subgraph(tmp_path, ["n0", "n2", "n4", "n6"])
    at: list[int] = []
    seen = {"iteration": 0}
    said: list[str] = []

    def progress(state, _losses) -> None:
        seen["iteration"] = state.iteration

    def notify(text: str) -> None:
        said.append(text)
        at.append(seen["iteration"])

    learn(program, config, progress=progress, notify=notify)
    assert at, "the subgraph grew"
    program, config = stalled_subgraph(tmp_path, ["n0", "n2", "n4", "n6"])
    said.clear()
    stopped = learn(program, replace(config, train=replace(config.train, max_iters=at[0])), notify=said.append)
    assert not stopped.solved and stopped.grown == 1 and stopped.iterations == at[0]
    (counts,) = re.findall(r"\(([\d,]+) missed positives, ([\d,]+) derived negatives\)", said[0])
    assert stopped.score.mistakes == sum(int(n) for n in counts), (said, stopped.rule_texts())


def test_training_stalled_on_a_subgraph_under_noise_grows_it_too(tmp_path):
    """As without noise: with --noise, where no rules are accepted and the best have stalled, their
    counterexamples on the whole world grow the subgraph (every other node: no edge in it), and the two-edge
    rule is learned and accepted."""
    from dataclasses import replace

    from nlndl.learn import learn

    program, config = stalled_subgraph(tmp_path, ["n0", "n2", "n4", "n6"])
    result = learn(program, replace(config, noise=0.1))
    assert result.accepted and result.grown >= 1, (result.rule_texts(), result.score.quality())
    assert result.rule_texts() == ["t(A, B) :- edge(A, C), edge(C, B)."] and result.score.mistakes == 0


def test_a_run_reports_its_accepted_rules_over_those_that_grew_its_subgraph():
    """Rules that grew the subgraph may get fewer examples of the whole world right than the rules a run ends
    with; they are its result only where it ends neither solved nor accepted (or the last rules went
    unchecked): an accepted program is reported as accepted, never rules outside the allowance."""
    from nlndl.compiler.crisp import BodyAtom, Rule
    from nlndl.learn import reported
    from nlndl.verify import Score

    def rules(p: str) -> list[Rule]:
        return [Rule("t", (("v", "A"), ("v", "B")), (BodyAtom(p, (("v", "A"), ("v", "B"))),))]

    last = (rules("edge"), Score(positives=12, negatives=277, true_positives=12, false_positives=9))
    grew = (rules("link"), Score(positives=12, negatives=277, true_positives=7, false_positives=0))
    assert reported(last, grew, accepted=True) is last
    assert reported(last, grew, accepted=False) is grew
    assert reported(last, None, accepted=False) is last
    unchecked = (rules("edge"), Score(unchecked="not checked on the whole world: ..."))
    assert reported(unchecked, grew, accepted=False) is grew
    worse = (rules("link"), Score(positives=12, negatives=277, true_positives=2, false_positives=0))
    assert reported(last, worse, accepted=False) is last


def number_line(root: Path, n: int, cyclic: bool = False) -> Path:
    """``odd(X)`` over zero/1 and succ/2 on 0..n-1 (a closed world), as the bundled odd on a longer line;
    ``cyclic``: succ(n-1, 0) closes the line into a cycle."""
    lines = [".decl zero(x: number)", ".decl succ(x: number, y: number)", ".decl odd(x: number)", "zero(0)."]
    lines += [f"succ({i},{i + 1})." for i in range(n - 1)] + ([f"succ({n - 1},0)."] if cyclic else [])
    lines += [".learn odd(vars=3)", ".closed odd"] + [f".pos odd({i})." for i in range(1, n, 2)]
    (root / "odd.dl").write_text("\n".join(lines) + "\n")
    return root / "odd.dl"


def test_deep_recursion_over_a_line_trains_on_a_subgraph_around_its_landmark(tmp_path):
    """41 steps over a line of 41 numbers: auto trains on SUBGRAPH_DEEP constants drawn first from 0 (the one
    constant of zero/1), where the base case and the recursion are both seen, and the rules hold on the whole."""
    sketch = number_line(tmp_path, 41)
    grounded = ground_sketch(sketch)
    program = grounded.lower(subgraph="auto")
    assert [grounded.symbols.value(c) for c in sorted(grounded.chosen[0])] == list(range(SUBGRAPH_DEEP))
    assert program.steps <= SUBGRAPH_DEEP and program.whole[0].entities == 41
    result = api.train(sketch, seed=1)
    assert result.solved, result.rule_texts()
    assert clingo_score(compile_sketch(sketch, subgraph=None), result.rules).solved


def test_deep_recursion_stays_whole_over_a_cycle_or_with_steps_given(tmp_path):
    """A cycle is no forest (a subgraph of it can cut the paths its closed world's atoms need), and steps
    the user gives are the user's: both keep the whole world."""
    assert not compile_sketch(number_line(tmp_path, 41, cyclic=True), subgraph="auto").whole
    assert not compile_sketch(number_line(tmp_path, 41), subgraph="auto", steps=41).whole


def test_deep_recursion_with_given_examples_is_drawn_from_its_landmark(tmp_path):
    """Given examples (no .closed) of a deep recursion: its subgraph is still the ball around 0 where the base
    case lies, not the constants of given examples (compiler.subgraph.around_given, for other subgraphs)."""
    lines = [".decl zero(x: number)", ".decl succ(x: number, y: number)", ".decl lt(x: number, y: number)"]
    lines += ["zero(0)."] + [f"succ({i},{i + 1})." for i in range(40)] + [".learn lt(vars=3)"]
    lines += [f".pos lt({i}, {i + 7})." for i in range(20, 33)] + [f".neg lt({i + 7}, {i})." for i in range(20, 33)]
    (tmp_path / "lt.dl").write_text("\n".join(lines) + "\n")
    grounded = ground_sketch(tmp_path / "lt.dl")
    program = grounded.lower(subgraph="auto")
    assert program.whole and program.whole[0].entities == 41
    assert [grounded.symbols.value(c) for c in sorted(grounded.chosen[0])] == list(range(SUBGRAPH_DEEP))


def test_rules_that_only_miss_positives_of_the_subgraph_are_checked_on_the_whole_world(tmp_path):
    """two(A, B) :- edge(A, C), edge(C, B) over 300 nodes, trained on 40: the subgraph keeps examples whose
    middle node it left out, so the rule misses positives there, and only there. It is checked on the whole
    world as soon as it is the best, and holds: solved well within the 400 iterations after which a stalled
    subgraph would be checked (before, no seed was solved within 200)."""
    rng = random.Random(1)
    edges = {(a, b) for a in range(300) for b in rng.sample(range(300), 2) if a != b}
    after = {}
    for a, b in edges:
        after.setdefault(a, set()).add(b)
    two = sorted({(a, c) for a, b in edges for c in after.get(b, ())})
    negatives = sorted({(a, c) for a, c in ((rng.randrange(300), rng.randrange(300)) for _ in range(900))} - set(two))
    lines = [".decl edge(a: symbol, b: symbol)", ".decl two(a: symbol, b: symbol)", ".learn two(vars=3)"]
    lines += [f'edge("n{a}", "n{b}").' for a, b in sorted(edges)]
    lines += [f'.pos two("n{a}", "n{c}").' for a, c in two] + [f'.neg two("n{a}", "n{c}").' for a, c in negatives]
    (tmp_path / "sketch.dl").write_text("\n".join(lines) + "\n")
    for seed in range(3):
        result = api.train(tmp_path / "sketch.dl", seed=seed, subgraph=40, max_iters=200)
        assert result.solved and [render(r) for r in result.rules] == ["two(A, B) :- edge(A, C), edge(C, B)."]
