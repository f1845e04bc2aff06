"""Reading rules back: dropping superfluous clauses from a near-miss (the reference's finishing step)."""

from pathlib import Path

from nlndl import api
from nlndl.extract import prune_clauses, render
from nlndl.learn import LearnConfig, Learner

LENGTH = Path(__file__).parent.parent / "examples" / "ilp" / "dilp" / "length" / "sketch.dl"
KNOWN = """
target(A, B) :- zero(A), zero(B).
target(A, B) :- cons(A, C), target(C, D), succ(D, B).
"""


def test_a_clause_that_only_derives_negatives_is_dropped(tmp_path):
    program = api.compile(LENGTH)
    path = tmp_path / "rules.dl"
    # value(A, B) with a successor of B: right for three lists, wrong for [1,2,3] of length 3 (its head is 1)
    path.write_text(KNOWN + "target(A, B) :- value(A, B), succ(B, C).\n")
    rules = api.read_rules(path, program)
    errors = Learner(program, LearnConfig()).errors
    assert errors(rules) == 1
    pruned = prune_clauses(rules, errors)
    assert errors(pruned) == 0
    assert [render(r) for r in pruned] == [render(r) for r in rules[:2]]


def test_a_clause_that_derives_positives_stays(tmp_path):
    program = api.compile(LENGTH)
    path = tmp_path / "rules.dl"
    path.write_text("target(A, B) :- zero(A), zero(B).\ntarget(A, B) :- value(A, B).\n")
    rules = api.read_rules(path, program)
    errors = Learner(program, LearnConfig()).errors
    # value(A, B) derives four positives and two negatives: dropping it would cost more than it saves
    assert prune_clauses(rules, errors) == rules
