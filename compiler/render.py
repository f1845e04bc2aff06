"""Render interned facts and rules as clingo-compatible Datalog text (for checks against clingo)."""

from __future__ import annotations

from nlndl.compiler.crisp import Arg, Database, Rule
from nlndl.compiler.symbols import SymbolTable


def _arg(arg: Arg, symbols: SymbolTable) -> str:
    kind, value = arg
    if kind == "c":
        return symbols.render(int(value))
    return "_" if value == "_" else str(value)


def render_clingo(facts: Database, rules: list[Rule], symbols: SymbolTable) -> str:
    """Facts then rules, one per line; negation as ``not``. Names must already be clingo-safe."""
    lines = []
    for name in sorted(facts):
        for fact in sorted(facts[name]):
            args = ",".join(symbols.render(c) for c in fact)
            lines.append(f"{name}({args})." if fact else f"{name}.")
    for rule in rules:
        head = f"{rule.head}({','.join(_arg(a, symbols) for a in rule.head_args)})"
        body = ", ".join(
            ("not " if atom.negated else "") + f"{atom.predicate}({','.join(_arg(a, symbols) for a in atom.args)})"
            for atom in rule.body
        )
        lines.append(f"{head} :- {body}." if body else f"{head}.")
    return "\n".join(lines) + "\n"
