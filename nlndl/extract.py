"""Reading learned NLN weights back as Datalog rules, and simplifying them (numpy only, no torch).

A DNF predicate function reads as one clause per selected conjunction term; a CNF one is multiplied
out into clauses. Candidate atoms with function terms such as ``sorted(init(A))`` become ordinary
Datalog: ``sorted(F) :- init(A, F)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from nlndl.compiler.crisp import Arg, BodyAtom, Rule
from nlndl.compiler.ir import CompiledProgram, InputAtom, LearnedIR, projection_of, var_name
from nlndl.runtime.formula import selected

Literal = tuple[int, bool]  # (candidate atom index, negated)
MAX_CNF_CLAUSES = 64


def clause_bodies(ir: LearnedIR, inner: np.ndarray, outer: np.ndarray, threshold: float) -> list[list[Literal]]:
    """The formula as a list of conjunctions of literals (DNF), read from one restart's memberships."""
    n = len(ir.inputs)
    terms = [
        [(lit.index, lit.negated) for lit in selected(inner[t], n, True, threshold)]
        for t in np.flatnonzero(outer > threshold)
    ]
    if ir.form == "dnf":
        return [t for t in terms if t]  # an empty conjunction would make every atom true: not Datalog
    if any(not t for t in terms):
        return []  # an empty disjunction is false, and so is the conjunction containing it
    bodies: list[list[Literal]] = []
    for combo in itertools.product(*terms):
        body = sorted(set(combo))
        if body not in bodies:
            bodies.append(body)
        if len(bodies) > MAX_CNF_CLAUSES:
            break
    return bodies


def _term(var: int, func: str | None, extra: list[BodyAtom], names: dict[tuple[int, str], str]) -> Arg:
    if func is None:
        return ("v", var_name(var))
    key = (var, func)
    if key not in names:
        names[key] = f"{func.capitalize()}_{var_name(var)}"
        extra.append(BodyAtom(func, (("v", var_name(var)), ("v", names[key]))))
    return ("v", names[key])


def to_rule(ir: LearnedIR, body: list[Literal]) -> Rule | None:
    """A Datalog rule ``p(A, B, ...) :- body``; None when it would be unsafe (a variable left unbound)."""
    extra: list[BodyAtom] = []
    names: dict[tuple[int, str], str] = {}
    atoms = []
    for index, negated in body:
        atom: InputAtom = ir.inputs[index]
        args = tuple(_term(v, f, extra, names) for v, f in zip(atom.vars, atom.funcs, strict=True))
        projection = projection_of(atom.predicate)
        if projection is None:
            atoms.append(BodyAtom(atom.predicate, args, negated))
        else:  # edge[0](A) is written edge(A, _)
            relation, position = projection
            atoms.append(BodyAtom(relation, (("v", "_"),) * position + args + (("v", "_"),) * (1 - position), negated))
    head = tuple(("v", var_name(i)) for i in range(ir.arity))
    rule = Rule(ir.predicate, head, tuple(extra + atoms))
    return rule if is_safe(rule) else None


def is_safe(rule: Rule) -> bool:
    """Every variable of the head and of negated atoms occurs in a positive body atom."""
    bound = {v for a in rule.body if not a.negated for k, v in a.args if k == "v"}
    needed = {v for k, v in rule.head_args if k == "v"}
    needed |= {v for a in rule.body if a.negated for k, v in a.args if k == "v" and v != "_"}
    return needed <= bound


def canonical(rule: Rule) -> Rule:
    """Variables renamed in order of first appearance (head first): A, B, C, ...; body atoms deduplicated."""
    mapping: dict[str, str] = {}

    def rename(arg: Arg) -> Arg:
        kind, value = arg
        if kind != "v" or value == "_":
            return arg
        if value not in mapping:
            mapping[value] = var_name(len(mapping))
        return ("v", mapping[value])

    head = tuple(rename(a) for a in rule.head_args)
    body: list[BodyAtom] = []
    for atom in rule.body:
        renamed = BodyAtom(atom.predicate, tuple(rename(a) for a in atom.args), atom.negated)
        if renamed not in body:
            body.append(renamed)
    return Rule(rule.head, head, tuple(body))


def extract(
    program: CompiledProgram, memberships: dict[str, tuple[np.ndarray, np.ndarray]], threshold: float = 0.5
) -> list[Rule]:
    """Crisp rules of every learned predicate from (inner, outer) memberships of one restart."""
    rules: list[Rule] = []
    for name, (inner, outer) in memberships.items():
        ir = program.learned[name]
        for body in clause_bodies(ir, inner, outer, threshold):
            rule = to_rule(ir, body)
            if rule is not None:
                rule = canonical(rule)
                if rule not in rules:
                    rules.append(rule)
    return rules


def simplify(rules: list[Rule], still_correct: Callable[[list[Rule]], bool]) -> list[Rule]:
    """Drop every clause, then every body atom, whose removal keeps ``still_correct`` (the paper's final
    satisfiability check), repeating until nothing more can go. Deterministic: tried in order."""
    current = list(rules)
    changed = True
    while changed:
        changed = False
        for rule in list(current):
            trial = [r for r in current if r is not rule]
            if still_correct(trial):
                current, changed = trial, True
        for index in range(len(current)):
            for atom in list(current[index].body):
                rule = current[index]
                smaller = Rule(rule.head, rule.head_args, tuple(a for a in rule.body if a is not atom))
                if not smaller.body or not is_safe(smaller):
                    continue
                trial = current[:index] + [smaller] + current[index + 1 :]
                if still_correct(trial):
                    current, changed = trial, True
    return sorted({canonical(r) for r in current}, key=_order)


def _order(rule: Rule) -> tuple:
    return (rule.head, len(rule.body), [(a.predicate, a.negated, a.args) for a in rule.body])
