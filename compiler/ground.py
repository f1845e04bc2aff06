"""Grounding: a checked sketch's worlds with their background rules evaluated, their domains and examples,
and each learned predicate's candidate body atoms (its input list); :mod:`nlndl.compiler.lowering` lays them
out as valuation slots and index arrays.

For each learned predicate p with variables V, the input list is every well-typed atom
Terms(q, V) of its body predicates (minus p's own head atom).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nlndl.compiler import ast, examples
from nlndl.compiler.check import Checked, LearnSpec
from nlndl.compiler.crisp import BodyAtom, Database, Rule, evaluate
from nlndl.compiler.diagnostics import Diagnostics, Span
from nlndl.compiler.facts import fact_rows, read_facts
from nlndl.compiler.ir import InputAtom
from nlndl.compiler.symbols import SymbolTable


@dataclass
class GroundWorld:
    """A world after background evaluation, before lowering."""

    name: str
    span: Span | None
    db: Database
    examples: list[examples.Example]
    domains: dict[str, list[int]]
    read: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # see fact_positions
    # a subgraph's constants whose projections its facts read otherwise than the whole world's (see
    # compiler.subgraph.cut_short): its example atoms over them are unlabelled there, neither positive nor negative
    unlabelled: frozenset[int] = frozenset()

    @cached_property
    def positions(self) -> dict[str, dict[int, int]]:
        """Per type: constant id -> its position in the type's domain (its index along a valuation axis)."""
        return {t: {c: i for i, c in enumerate(d)} for t, d in self.domains.items()}

    def fact_constants(self, learned: set[str]) -> set[int]:
        """The constants of the world's extensional facts (of every relation not learned, background rules'
        included): every constant a safe clause without constants or functions can derive is among them."""
        return {c for name, rel in self.db.items() if name not in learned for fact in rel for c in fact}

    def fact_positions(self, name: str, types: tuple[str, ...]) -> np.ndarray:
        """(facts, arity) positions of a relation's true facts in its attributes' domains, read once per world
        (the valuation and every join of every demand round share them)."""
        if name not in self.read:
            rows = [tuple(self.positions[t][c] for t, c in zip(types, f, strict=True)) for f in self.db.get(name, ())]
            self.read[name] = np.array(rows, dtype=np.int64).reshape(len(rows), len(types))
        return self.read[name]


def _args(atom: ast.Atom, symbols: SymbolTable) -> tuple[tuple[str, int | str], ...]:
    return tuple(("v", a.name) if isinstance(a, ast.Var) else ("c", symbols.intern(a.value)) for a in atom.args)


def to_rule(clause: ast.Clause, symbols: SymbolTable) -> Rule:
    body = tuple(BodyAtom(lit.atom.predicate, _args(lit.atom, symbols), lit.negated) for lit in clause.body)
    return Rule(clause.head.predicate, _args(clause.head, symbols), body)


def world_program(
    checked: Checked,
    parts: list[ast.World],
    symbols: SymbolTable,
    fact_dir: Path | None,
    diags: Diagnostics,
    memory_limit: int | None = None,
    texts: Mapping[str, str] | None = None,
) -> tuple[Database, list[Rule]]:
    """The facts (inline and from .input files) and background rules of one world's parts. ``texts``: the
    .input relations' facts files given as text (a sketch compiled from memory), read instead of files."""
    facts: Database = {name: set() for name in checked.relations}
    rules = []
    for part in parts:
        for name, span in part.inputs:
            base = [checked.types[a.type] for a in checked.relations[name].attributes]
            path = (fact_dir or Path(span.file).parent) / f"{name}.facts"
            if texts is not None and name in texts:
                found = fact_rows(texts[name], f"{span.file}#{name}.facts", base, diags)
            else:
                found = read_facts(path, base, diags, span, memory_limit)
            for row in found:
                facts[name].add(tuple(symbols.intern(v) for v in row))
        for clause in part.clauses:
            if clause.body:
                rules.append(to_rule(clause, symbols))
            else:
                facts[clause.head.predicate].add(tuple(symbols.intern(a.value) for a in clause.head.args))
    return facts, rules


def project(checked: Checked, db: Database) -> None:
    """Fill each projection a learned predicate may negate (see Checked) from ``db``'s facts, in place:
    ``edge[0]`` holds X where ``edge(X, _)`` does. Only facts define a projected relation, so projecting after
    the background closure is the same as deriving it there; a subgraph projects its own facts."""
    for name, (q, position) in checked.projections.items():
        db[name] = {(fact[position],) for fact in db[q]}


def world_parts(sketch: ast.Sketch) -> list[list[ast.World]]:
    """Each world's parts: the top level alone, or the shared top level plus one ``.world`` block."""
    shared, *own = sketch.worlds
    return [[shared, world] for world in own] if own else [[shared]]


def ground_worlds(
    checked: Checked,
    symbols: SymbolTable,
    fact_dir: Path | None,
    diags: Diagnostics,
    memory_limit: int | None = None,
    texts: Mapping[str, str] | None = None,
) -> list[GroundWorld]:
    """Facts, background closure, examples and domains of every world (``texts``: see world_program)."""
    out = []
    for parts in world_parts(checked.sketch):
        world = parts[-1]
        facts, rules = world_program(checked, parts, symbols, fact_dir, diags, memory_limit, texts)
        db = evaluate(facts, rules)
        project(checked, db)
        examples = [
            (e.atom.predicate, tuple(symbols.intern(a.value) for a in e.atom.args), e.positive, e.span)
            for e in world.examples
        ]
        out.append(GroundWorld(world.name, world.span, db, examples, world_domains(checked, db, examples)))
    return out


def readable(checked: Checked) -> set[str]:
    """Every relation the learned rules can read or write: the learned ones, their body predicates and
    functions (the relations a world's valuation lays out and a check needs the facts of)."""
    return set(checked.learned) | {q for s in checked.learned.values() for q in (*s.body, *s.functions)}


def world_domains(checked: Checked, db: Database, atoms: list[examples.Example]) -> dict[str, list[int]]:
    """Per type, the constants that occur at an argument of that type in a fact or an example, ascending; a
    subtype's constants belong to every type above it."""
    domains: dict[str, set[int]] = {t: set() for t in checked.types}
    for name, rel in db.items():
        types = [a.type for a in checked.relations[name].attributes]
        for fact in rel:
            for t, c in zip(types, fact, strict=True):
                domains[t].add(c)
    for name, args, _, _ in atoms:
        for a, c in zip(checked.relations[name].attributes, args, strict=True):
            domains[a.type].add(c)
    for t in list(domains):
        for sup in checked.supertypes(t)[1:]:
            domains[sup] |= domains[t]
    return {t: sorted(d) for t, d in domains.items()}


def _candidates(spec: LearnSpec, checked: Checked) -> dict[str, list[list[tuple[int, str | None]]]]:
    """Per body predicate, per argument: the (variable, function) terms of a fitting type."""
    terms: list[tuple[int, str | None, str]] = [(v, None, t) for v, t in enumerate(spec.var_types)]
    for f in spec.functions:
        arg_type, out_type = (a.type for a in checked.relations[f].attributes)
        terms += [(v, f, out_type) for v, t in enumerate(spec.var_types) if checked.is_subtype(t, arg_type)]
    return {
        q: [[(v, f) for v, f, t in terms if checked.is_subtype(t, a.type)] for a in checked.relations[q].attributes]
        for q in spec.body
    }


def count_inputs(spec: LearnSpec, checked: Checked) -> int:
    """An upper bound on len(input_list(spec, checked).atoms), exact in Python integers, without enumerating."""
    return sum(math.prod(len(c) for c in args) for args in _candidates(spec, checked).values())


class Candidates(NamedTuple):
    """A learned predicate's candidate body atoms, and how many ``spec.repeat`` left out for repeating a
    variable (none under repeat=all)."""

    atoms: list[InputAtom]
    repeats_left_out: int


def input_list(spec: LearnSpec, checked: Checked) -> Candidates:
    """Terms(q, V) for each body predicate q: every well-typed atom over the variables (and the allowed
    functions of them), the head atom excluded, and those that repeat a variable where ``spec.repeat``
    leaves them out (counted)."""
    atoms, left_out = [], 0
    head = InputAtom(spec.predicate, tuple(range(spec.head_arity)))
    for q, candidates in _candidates(spec, checked).items():
        for combo in np.ndindex(*[len(c) for c in candidates]) if candidates else [()]:
            chosen = [candidates[i][j] for i, j in enumerate(combo)]
            atom = InputAtom(q, tuple(v for v, _ in chosen), tuple(f for _, f in chosen))
            if atom == head:
                continue
            if len(set(chosen)) == len(chosen) or repeats(spec.repeat, len(chosen)):
                atoms.append(atom)
            else:
                left_out += 1
    return Candidates(atoms, left_out)


def repeats(mode: str, arity: int) -> bool:
    """Whether a candidate atom of ``arity`` arguments may repeat a variable under ``repeat=mode``."""
    return mode == "all" or (mode == "binary" and arity <= 2)
