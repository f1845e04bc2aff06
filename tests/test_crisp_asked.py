"""A check needs a program's model only at the examples when no rule body reads a rule head: derived_at
(nlndl's evaluator) and the asked-only clingo program (verify.asking) give the full model's answer there, on
random programs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nlndl.compiler.crisp import BodyAtom, Rule, derived_at, evaluate, reads_no_head
from nlndl.engines import clingo_model
from nlndl.verify import asking

VARS = ["A", "B", "C", "D"]


@st.composite
def programs(draw):
    constants = list(range(draw(st.integers(2, 6))))
    facts = {
        name: set(draw(st.lists(st.tuples(st.sampled_from(constants), st.sampled_from(constants)), max_size=12)))
        for name in ("e", "f")
    }
    facts["t"] = set(draw(st.lists(st.tuples(st.sampled_from(constants), st.sampled_from(constants)), max_size=2)))
    rules = []
    for _ in range(draw(st.integers(1, 3))):
        head = tuple(("v", v) for v in draw(st.sampled_from([("A", "B"), ("B", "A"), ("A", "A")])))
        head = head if draw(st.booleans()) else (head[0], ("c", draw(st.sampled_from(constants))))
        body = []
        for _ in range(draw(st.integers(1, 3))):
            args = tuple(("v", draw(st.sampled_from(VARS))) for _ in range(2))
            body.append(BodyAtom(draw(st.sampled_from(["e", "f"])), args))
        if draw(st.booleans()):  # a negated atom over variables the positive ones bind
            bound = sorted({v for a in body for _, v in a.args})
            body.append(BodyAtom("f", (("v", draw(st.sampled_from(bound))), ("v", draw(st.sampled_from(bound)))), True))
        named = {v for a in body if not a.negated for _, v in a.args}
        if all(kind == "c" or v in named for kind, v in head):
            rules.append(Rule("t", head, tuple(body)))
    asked = {("t", (a, b)) for a in constants for b in constants if draw(st.booleans())}
    return facts, rules, asked


def clingo_text(facts, rules):
    def term(arg):
        return f"c{arg[1]}" if arg[0] == "c" else arg[1]

    lines = [f"{p}(c{a},c{b})." for p, rows in facts.items() for a, b in rows]
    lines += [f"#external {p}(x,x)." for p in facts]  # every relation known to clingo, empty or not
    for r in rules:
        body = ", ".join(
            ("not " if a.negated else "") + f"{a.predicate}({', '.join(map(term, a.args))})" for a in r.body
        )
        lines.append(f"t({', '.join(map(term, r.head_args))}) :- {body}.")
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None, derandomize=True)
@given(programs())
def test_the_model_at_the_asked_atoms_is_the_full_models(case):
    facts, rules, asked = case
    assert reads_no_head(rules)
    full = evaluate(facts, rules)
    assert derived_at(facts, rules, asked) == {a for a in asked if a[1] in full.get("t", set())}
    expected = {a for a in asked if a[1] in full.get("t", set())}
    restricted_facts, restricted = asking(facts, rules, asked, {"e", "f", "t"})
    shown = clingo_model(clingo_text(restricted_facts, restricted), {"t": 2})
    assert {(p, tuple(int(str(x)[1:]) for x in args)) for p, args in shown} & asked == expected


def test_a_rule_reading_a_head_is_not_asked_only():
    rule = Rule("t", (("v", "A"), ("v", "B")), (BodyAtom("t", (("v", "B"), ("v", "A"))),))
    assert not reads_no_head([rule])
