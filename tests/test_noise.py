"""Noise-tolerant learning: a program wrong on at most the stated fraction of each class is accepted, the
shortest description among them wins, and without --noise nothing changes."""

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from nlndl import api
from nlndl.allowance import Allowance, cost, example_counts
from nlndl.bench.noise import flip
from nlndl.cli import app
from nlndl.compiler.crisp import BodyAtom, Rule
from nlndl.holdout import hold_out
from nlndl.rules import rules_from_text
from nlndl.verify import Score, clingo_score, validation_score

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
EDGES = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f"), ("a", "f"), ("b", "e")]


def undirected(tmp_path: Path, wrong: int) -> Path:
    """Undirected edges on six nodes, every pair an example, ``wrong`` of the positives labelled negative."""
    nodes = "abcdef"
    both = {(a, b) for a, b in EDGES} | {(b, a) for a, b in EDGES}
    lines = [".decl edge(a: symbol, b: symbol)", ".decl target(a: symbol, b: symbol)", ".learn target(vars=2)"]
    lines += [f'edge("{a}", "{b}").' for a, b in EDGES]
    flipped = sorted(both)[:wrong]
    for a in nodes:
        for b in nodes:
            positive = (a, b) in both and (a, b) not in flipped
            lines.append(f'.{"pos" if positive else "neg"} target("{a}", "{b}").')
    path = tmp_path / "sketch.dl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_allowance_is_a_fraction_of_each_class():
    program = api.compile(ROOT / "examples/ilp/less_than/sketch.dl")
    labels = np.concatenate([w.example_labels for w in program.worlds])
    allowance = Allowance.of_counts(example_counts(program), 0.1)
    assert allowance == Allowance(int(0.1 * (labels > 0.5).sum()), int(0.1 * (labels <= 0.5).sum()))
    assert Allowance.of_counts(example_counts(program), 0.0) == Allowance()
    score = Score(positives=10, negatives=90, true_positives=10 - allowance.missed, false_positives=allowance.derived)
    assert allowance.admits(score)
    score.false_positives += 1
    assert not allowance.admits(score)


def test_the_description_length_counts_mistakes_and_literals():
    rule = Rule("t", (("v", "A"),), (BodyAtom("e", (("v", "A"), ("v", "B"))), BodyAtom("e", (("v", "B"), ("v", "A")))))
    assert cost(Score(positives=5, negatives=5, true_positives=4, false_positives=2), [rule, rule]) == 3 + 6


def test_flip_turns_a_fraction_of_positives_and_as_many_negatives_with_the_seed():
    program = api.compile(ROOT / "examples/ilp/less_than/sketch.dl")
    clean = np.concatenate([w.example_labels for w in program.worlds])
    noisy, flipped = flip(program, 0.2, 3)
    labels = np.concatenate([w.example_labels for w in noisy.worlds])
    assert flipped == 2 * int(0.2 * (clean > 0.5).sum()) == int((labels != clean).sum())
    assert (labels > 0.5).sum() == (clean > 0.5).sum()
    again, _ = flip(program, 0.2, 3)
    np.testing.assert_array_equal(np.concatenate([w.example_labels for w in again.worlds]), labels)
    np.testing.assert_array_equal(np.concatenate([w.example_labels for w in program.worlds]), clean), "untouched"


def test_noise_accepts_the_clean_rule_on_mislabelled_examples(tmp_path):
    program = api.compile(undirected(tmp_path, wrong=1))
    result = api.train(program, seed=0, noise=0.1, time_limit=60)
    assert result.accepted and not result.solved
    assert sorted(result.rule_texts()) == ["target(A, B) :- edge(A, B).", "target(A, B) :- edge(B, A)."]
    assert result.score.mistakes == 1 and result.score.to_json()["f1"] < 1.0
    assert clingo_score(program, result.rules).mistakes == 1


def test_under_noise_clingo_checks_only_the_programs_a_check_keeps(tmp_path, monkeypatch):
    """The crisp evaluator picks the candidates: each program clingo scores is within the allowance and becomes
    the accepted one (before, clingo scored 44 candidates here, of which one was kept), and the accepted
    program's score is clingo's."""
    import nlndl.learn

    program = api.compile(undirected(tmp_path, wrong=1))
    checked, kept = [], []

    def counted(*args, **kwargs):
        checked.append(clingo_score(*args, **kwargs))
        return checked[-1]

    accept = nlndl.learn.Learner.accept

    def keeping(learner, restart, rules, score):
        before = learner.accepted
        accept(learner, restart, rules, score)
        kept.append(learner.accepted is not before)

    monkeypatch.setattr(nlndl.learn, "clingo_score", counted)
    monkeypatch.setattr(nlndl.learn.Learner, "accept", keeping)
    result = api.train(program, seed=0, noise=0.1, time_limit=60)
    assert result.accepted and checked and len(kept) == len(checked) and all(kept)
    assert checked[-1].to_json() == result.score.to_json()


def test_without_noise_a_mislabelled_example_is_not_accepted(tmp_path):
    program = api.compile(undirected(tmp_path, wrong=1))
    result = api.train(program, seed=0, max_iters=60)
    assert not result.solved and not result.accepted


def test_train_noise_exits_0_and_says_how_far_from_a_fit(tmp_path):
    sketch = undirected(tmp_path, wrong=1)
    out = tmp_path / "out"
    result = runner.invoke(app, ["train", str(sketch), "--noise", "0.1", "-D", str(out), "-q", "--time-limit", "60"])
    assert result.exit_code == 0, result.output
    assert "accepted under noise 0.1" in result.output and "wrong on 1 of 36 training examples" in result.output
    record = json.loads((out / "target.json").read_text())
    assert record["accepted"] and not record["solved"] and record["noise"] == 0.1
    assert runner.invoke(app, ["train", str(sketch), "--noise", "0.6"]).exit_code == 2


def test_the_sketch_says_its_noise_and_the_option_overrides_it(tmp_path):
    sketch = undirected(tmp_path, wrong=1)
    sketch.write_text(".noise 0.1\n" + sketch.read_text())
    program = api.compile(sketch)
    assert program.noise == 0.1
    out = tmp_path / "out"
    result = runner.invoke(app, ["train", str(sketch), "-D", str(out), "-q", "--time-limit", "60"])
    assert result.exit_code == 0 and "accepted under noise 0.1" in result.output, result.output
    strict = runner.invoke(app, ["train", str(sketch), "--noise", "0", "-D", str(out), "-q", "--max-iters", "60"])
    assert strict.exit_code == 1 and "NOT solved" in strict.output, strict.output
    sketch.write_text(sketch.read_text().replace(".noise 0.1", ".noise 0.7"))
    bad = runner.invoke(app, ["compile", str(sketch)])
    assert bad.exit_code == 1 and f"{sketch}:1:1: error: .noise must be a fraction from 0 to 0.5, got 0.7" in bad.output


def test_bench_noise_prints_the_runs_right_on_the_clean_labels(tmp_path):
    args = ["bench", "noise", "--tasks", "dilp/undirected_edge", "--levels", "0,0.2", "--seeds", "1", "-q"]
    result = runner.invoke(app, [*args, "--examples", str(ROOT / "examples/ilp"), "--json", str(tmp_path / "n.json")])
    assert result.exit_code == 0, result.output
    assert "| dilp/undirected_edge | 1/1 (0 flipped) |" in result.output
    report = json.loads((tmp_path / "n.json").read_text())
    assert [r["noise"] for r in report["runs"]] == [0.0, 0.2]
    assert runner.invoke(app, ["bench", "noise", "--levels", "0.7"]).exit_code == 2


def test_validation_holds_out_examples_and_scores_the_rules_on_them(tmp_path):
    program = api.compile(undirected(tmp_path, wrong=0))
    split, held = hold_out(program, 0.25, seed=3)
    assert held == 3 + 5  # floor(0.25 x 14) positives, floor(0.25 x 22) negatives
    (world,) = split.worlds
    assert world.example_slots.size == 36 - 8 and world.arrays["holdout/slots"].size == 8
    assert not set(world.example_slots.tolist()) & set(world.arrays["holdout/slots"].tolist())
    again, _ = hold_out(program, 0.25, seed=3)
    np.testing.assert_array_equal(again.worlds[0].arrays["holdout/slots"], world.arrays["holdout/slots"])
    assert program.worlds[0].example_slots.size == 36, "the program is left as it was"
    result = api.train(program, seed=0, validation=0.25, time_limit=60)
    assert result.solved and result.score.positives == 14 - 3
    assert result.validation.positives == 3 and result.validation.negatives == 5 and result.validation.f1 == 1.0


def test_validation_in_a_closed_world_leaves_the_held_out_atoms_unknown():
    program = api.compile(ROOT / "examples/ilp/ancestor/sketch.dl")
    split, _ = hold_out(program, 0.2, seed=0)
    rules = rules_from_text(
        "ancestor(A, B) :- parent(A, B).\nancestor(A, B) :- ancestor(A, C), ancestor(C, B).\n", program, "<rules>"
    )
    whole, trained = clingo_score(program, rules), clingo_score(split, rules)
    assert whole.solved and trained.solved, "a held-out positive derived is no false positive of the closed world"
    held = validation_score(split, rules)
    assert held.positives == int(0.2 * whole.positives) and held.f1 == 1.0
    assert trained.positives + held.positives == whole.positives
    assert trained.negatives + held.negatives == whole.negatives


def test_train_validation_prints_the_held_out_score(tmp_path):
    sketch = undirected(tmp_path, wrong=0)
    out = tmp_path / "out"
    args = ["train", str(sketch), "--validation", "0.25", "-D", str(out), "-q", "--time-limit", "60"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "validation (3 positive and 5 negative examples held out, clingo): precision 1.000" in result.output
    record = json.loads((out / "target.json").read_text())
    assert record["validation_fraction"] == 0.25 and record["validation"]["f1"] == 1.0
