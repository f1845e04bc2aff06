"""verify.RuleDerivations scores a rule set from what each rule derives alone, kept between calls: the same
score as crisp_score, rule set after rule set, with the store full or not."""

from __future__ import annotations

import itertools

import pytest

from nlndl.api import compile_text
from nlndl.compiler.crisp import BodyAtom, Rule
from nlndl.verify import RuleDerivations, checked_worlds, crisp_score

SKETCH = """
.decl edge(x: symbol, y: symbol)
.decl red(x: symbol)
.decl t(x: symbol, y: symbol)
edge("a", "b"). edge("b", "c"). edge("c", "d"). edge("d", "a"). edge("b", "d"). edge("a", "c").
red("b"). red("d").
.learn t(vars=3)
.pos t("a", "c"). .pos t("b", "d"). .pos t("a", "b"). .pos t("c", "a").
.neg t("d", "d"). .neg t("c", "b"). .neg t("b", "a"). .neg t("a", "a").
"""


def v(*names: str) -> tuple:
    return tuple(("v", n) for n in names)


RULES = [
    Rule("t", v("A", "B"), (BodyAtom("edge", v("A", "B")),)),
    Rule("t", v("A", "B"), (BodyAtom("edge", v("A", "C")), BodyAtom("edge", v("C", "B")))),
    Rule("t", v("A", "B"), (BodyAtom("edge", v("B", "A")),)),
    Rule("t", v("A", "B"), (BodyAtom("edge", v("A", "B")), BodyAtom("red", v("B")))),
    Rule("t", v("A", "B"), (BodyAtom("edge", v("A", "C")), BodyAtom("red", v("C")), BodyAtom("edge", v("B", "C")))),
    Rule(
        "t", v("A", "B"), (BodyAtom("edge", v("A", "B")), BodyAtom("edge", v("B", "C")), BodyAtom("red", v("A"), True))
    ),
]


def fields(score) -> tuple:
    return (
        score.positives,
        score.negatives,
        score.true_positives,
        score.false_positives,
        score.missed,
        score.wrong,
        score.counterexamples,
    )


@pytest.mark.parametrize("kept", [1_000_000, 2])
def test_the_same_score_as_crisp_score_for_every_rule_set(kept, monkeypatch):
    monkeypatch.setattr(RuleDerivations, "MAX_KEPT", kept)
    program = compile_text(SKETCH)
    worlds = checked_worlds(program)
    derivations = RuleDerivations(program, worlds)
    scored = 0
    for size in range(len(RULES) + 1):
        for rules in itertools.combinations(RULES, size):
            expected = crisp_score(program, list(rules), worlds=worlds)
            assert fields(derivations.score(list(rules))) == fields(expected), rules
            assert fields(derivations.score(list(rules))) == fields(expected), rules  # read from the store
            scored += 1
    assert scored == 2 ** len(RULES)


def test_the_store_starts_anew_past_its_bound(monkeypatch):
    monkeypatch.setattr(RuleDerivations, "MAX_KEPT", 2)
    program = compile_text(SKETCH)
    worlds = checked_worlds(program)
    derivations = RuleDerivations(program, worlds)
    derivations.score(RULES)
    assert len(derivations.derived) == len(RULES) and derivations.kept > 2
    one = derivations.score([RULES[1]])
    assert list(derivations.derived) == [RULES[1]]
    assert fields(one) == fields(crisp_score(program, [RULES[1]], worlds=worlds))


def test_a_rule_set_that_reads_its_own_head_is_scored_whole():
    program = compile_text(SKETCH)
    worlds = checked_worlds(program)
    recursive = [RULES[0], Rule("t", v("A", "B"), (BodyAtom("t", v("A", "C")), BodyAtom("edge", v("C", "B"))))]
    derivations = RuleDerivations(program, worlds)
    assert fields(derivations.score(recursive)) == fields(crisp_score(program, recursive, worlds=worlds))
    assert crisp_score(program, recursive, worlds=worlds).true_positives == 4  # a, b, c reach everything
    assert not derivations.derived  # nothing kept per rule for it
    assert "asked" not in vars(derivations), "nor the examples' store made"
