"""Datalog text of facts and rules, as Soufflé and clingo read it: the one renderer of export and verification.

Names that either engine would misread (a relation starting with an upper-case letter is a variable to clingo)
are mangled by :class:`Names`; negation is ``!`` in Soufflé and ``not`` in clingo.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from nlndl.compiler.crisp import Arg, BodyAtom, Database, Rule
from nlndl.compiler.ir import CompiledProgram, projection_of
from nlndl.compiler.symbols import SymbolTable

SAFE = re.compile(r"^[a-z][A-Za-z0-9_]*$")


@dataclass
class Names:
    """Relation name -> a name valid in Soufflé and clingo (identity where already valid)."""

    forward: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_program(cls, program: CompiledProgram) -> Names:
        """The names of ``program``'s relations, worked out once per program."""
        declared = [name for name in program.relations if projection_of(name) is None]  # edge[0] is written edge(X, _)
        return program.once("names", lambda: cls.for_relations(declared))

    @classmethod
    def for_relations(cls, relations: list[str]) -> Names:
        forward: dict[str, str] = {}
        taken = {n for n in relations if SAFE.match(n)}
        for name in relations:
            if SAFE.match(name):
                forward[name] = name
                continue
            candidate, i = "r_" + name.lstrip("_"), 1
            while candidate in taken:
                candidate, i = f"r{i}_{name.lstrip('_')}", i + 1
            taken.add(candidate)
            forward[name] = candidate
        return cls(forward)

    def __call__(self, name: str) -> str:
        return self.forward.get(name, name)

    def originals(self) -> dict[str, str]:
        """Valid name -> relation name (the inverse of the names given), made once by a caller that reads many
        atoms back; a name not in it is its own."""
        out: dict[str, str] = {}
        for name, valid in self.forward.items():
            out.setdefault(valid, name)
        return out

    def header(self, comment: str) -> list[str]:
        changed = [f"{a} -> {b}" for a, b in self.forward.items() if a != b]
        return [f"{comment} names changed for Soufflé/clingo: {', '.join(changed)}"] if changed else []


def render(
    rule: Rule,
    negation: str = "!",
    names: Callable[[str], str] = str,
    symbols: SymbolTable | None = None,
    anonymous: bool = False,
) -> str:
    """Datalog text of a rule; ``negation`` is ``!`` (Soufflé) or ``not `` (clingo); constants (interned ids)
    are written as ``symbols`` has them; with ``anonymous``, a variable that occurs once in the rule is
    written ``_``, as the engines expect of a program file (Soufflé warns of a named one)."""
    once = set()
    if anonymous:
        seen = [v for args in (rule.head_args, *(a.args for a in rule.body)) for kind, v in args if kind == "v"]
        once = {v for v in seen if seen.count(v) == 1}

    def term(arg: Arg) -> str:
        kind, value = arg
        if kind == "c" and symbols is not None:
            return symbols.render(int(value))
        return "_" if kind == "v" and value in once else str(value)

    def atom(a: BodyAtom | None, pred: str, args: tuple[Arg, ...]) -> str:
        text = f"{names(pred)}({', '.join(term(v) for v in args)})"
        return (negation if a is not None and a.negated else "") + text

    head = atom(None, rule.head, rule.head_args)
    body = ", ".join(atom(a, a.predicate, a.args) for a in rule.body)
    return f"{head} :- {body}." if body else f"{head}."


def facts_lines(facts: Database, symbols: SymbolTable, names: Callable[[str], str] = str) -> list[str]:
    """One ``name(args).`` line per fact, relations and facts sorted."""
    lines = []
    for name in sorted(facts):
        for fact in sorted(facts[name]):
            args = ",".join(symbols.render(c) for c in fact)
            lines.append(f"{names(name)}({args})." if fact else f"{names(name)}.")
    return lines


def clingo_program(facts: Database, rules: list[Rule], symbols: SymbolTable, names: Callable[[str], str] = str) -> str:
    """Facts and rules as one clingo program (what verification runs)."""
    lines = facts_lines(facts, symbols, names)
    lines += [render(r, "not ", names, symbols) for r in rules]
    return "\n".join(lines) + "\n"
