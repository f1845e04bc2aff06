"""Reading rules back from a near-miss: a clause that derives only negatives, or a body atom that keeps a
clause from its positives, is dropped (the reference's finishing step), found by batched crisp passes over
the compiled substitutions."""

from pathlib import Path

import torch

from nlndl import api
from nlndl.datalog import render
from nlndl.learn import Drops, LearnConfig, Learner, drop_parts
from nlndl.runtime.chain import ChainConfig, ForwardChainer

LENGTH = Path(__file__).parent.parent / "examples" / "ilp" / "dilp" / "length" / "sketch.dl"
A, B, C, D = range(4)
KNOWN = [
    [("zero", (A,)), ("zero", (B,))],
    [("cons", (A, C)), ("target", (C, D)), ("succ", (D, B))],
]
# value(A, B) with a successor of B: right for three lists, wrong for [1,2,3] (its head is 1, its length 3)
SPARE = [("value", (A, B)), ("succ", (B, C))]


def model_with(clauses: list[list[tuple[str, tuple[int, ...]]]]) -> tuple[ForwardChainer, list[str]]:
    """Restart 0 holds ``clauses`` as crisp memberships, one per term; restart 1 holds nothing."""
    program = api.compile(LENGTH)
    model = ForwardChainer(program, ChainConfig(restarts=2))
    function = model.functions["target"]
    inputs = {(a.predicate, a.vars): i for i, a in enumerate(function.ir.inputs)}
    with torch.no_grad():
        function.inner.fill_(-20.0)
        function.outer.fill_(-20.0)
        for t, clause in enumerate(clauses):
            function.outer[0, t] = 20.0
            for atom in clause:
                function.inner[0, t, inputs[atom]] = 20.0
    return model, program


def test_a_clause_that_only_derives_negatives_is_dropped():
    model, program = model_with(KNOWN + [SPARE])
    assert int(model.crisp_wrong(0.5)[0]) == 1
    assert drop_parts(model, 0, 0.5, 1) == (Drops({"target": [2]}), 0)
    learner = Learner(program, LearnConfig())
    assert learner.check(model, model.losses().detach()) == 0
    rules, score = learner.best_rules(model)
    assert score.solved and len(rules) == 2
    assert "target(A, B) :- value(A, B), succ(B, C)." not in [render(r) for r in rules]


def test_a_clause_that_derives_positives_stays():
    # value(A, B) derives four positives and two negatives: dropping it would cost more than it saves
    model, _ = model_with([KNOWN[0], [("value", (A, B))]])
    wrong = int(model.crisp_wrong(0.5)[0])
    assert drop_parts(model, 0, 0.5, wrong) == (Drops(), wrong)


def test_a_body_atom_that_keeps_a_clause_from_its_positives_is_dropped():
    # the base case with value(A, B) too derives nothing ("0" has no value), so target("0", "0") and every
    # length built on it are missed; without value(A, B) the program is the known solution
    model, program = model_with([KNOWN[0] + [("value", (A, B))], KNOWN[1]])
    wrong = int(model.crisp_wrong(0.5)[0])
    assert wrong > 0
    assert drop_parts(model, 0, 0.5, wrong) == (Drops(), wrong)  # dropping whole clauses does not help
    value = [(a.predicate, a.vars) for a in model.functions["target"].ir.inputs].index(("value", (A, B)))
    assert drop_parts(model, 0, 0.5, wrong, atoms=True) == (Drops(atoms={"target": [(0, value)]}), 0)
    learner = Learner(program, LearnConfig())
    assert learner.check(model, model.losses().detach()) == 0
    rules, score = learner.best_rules(model)
    assert score.solved
    assert "target(A, B) :- zero(A), zero(B)." in [render(r) for r in rules]


def test_exported_programs_write_a_variable_used_once_as_an_underscore(tmp_path):
    from typer.testing import CliRunner

    from nlndl.cli import app
    from nlndl.compiler.crisp import BodyAtom, Rule

    rule = Rule("p", (("v", "A"),), (BodyAtom("q", (("v", "A"), ("v", "B"))), BodyAtom("r", (("v", "B"),))))
    lonely = Rule("p", (("v", "A"),), (BodyAtom("q", (("v", "A"), ("v", "C"))),))
    assert render(lonely) == "p(A) :- q(A, C).", "shown as learned"
    assert render(lonely, anonymous=True) == "p(A) :- q(A, _)."
    assert render(rule, anonymous=True) == "p(A) :- q(A, B), r(B).", "a variable used twice keeps its name"
    sketch = Path("examples/ilp/dilp/son/sketch.dl")
    out = tmp_path / "son"
    runner = CliRunner()
    trained = runner.invoke(app, ["train", str(sketch), "-D", str(out), "--json"])
    assert trained.exit_code == 0, trained.output
    texts = [p.read_text() for p in out.glob("*.dl")]
    assert any("_)" in t or "(_" in t for t in texts), "son's invented pred1(A) :- brother(A, B) has a singleton"
    for path in out.glob("*.dl"):
        checked = runner.invoke(app, ["check", str(path), str(sketch)])
        assert checked.exit_code == 0, checked.output


def test_exported_declarations_keep_the_sketchs_attribute_names(tmp_path):
    program = api.compile("examples/ilp/less_than/sketch.dl")
    result = api.train(program, seed=0)
    assert result.solved
    api.export(tmp_path, "lt", program, result)
    text = (tmp_path / "lt.dl").read_text()
    assert ".decl lt(x: Num, y: Num)" in text and ".decl succ(x: Num, y: Num)" in text
