"""Rules files read against a sketch, as a Datalog engine would check them: what ``nlndl check`` runs and
``nlndl export`` re-reads from a results file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from nlndl.compiler import ast
from nlndl.compiler.check import unsafe_arguments
from nlndl.compiler.crisp import Rule
from nlndl.compiler.diagnostics import CompileError, Diagnostics, Span
from nlndl.compiler.ground import to_rule
from nlndl.compiler.ir import CompiledProgram
from nlndl.compiler.parser import parse_file, parse_text
from nlndl.datalog import Names


def read_rules(path: Path, program: CompiledProgram, memory_limit: int | None = None) -> list[Rule]:
    """The rules of a Datalog file in the sketch syntax (e.g. an exported ``.dl``), checked against the sketch
    as a Datalog engine would: known relations with their arities and types, safe variables, rules only (its
    declarations and .input/.output lines are read and ignored). Raises CompileError with located errors."""
    return checked_rules(parse_file(path, memory_limit=memory_limit), program, str(path))


def rules_from_text(text: str, program: CompiledProgram, filename: str = "<rules>") -> list[Rule]:
    """:func:`read_rules` of rules given as text (e.g. those a results file records)."""
    sketch, diags = parse_text(text, filename)
    if diags:
        raise CompileError(diags)
    return checked_rules(sketch, program, filename)


def checked_rules(sketch: ast.Sketch, program: CompiledProgram, path: str) -> list[Rule]:
    """The rules of a parsed rules file, each checked against ``program``'s sketch (see :func:`read_rules`)."""
    symbols = program.symbol_table
    diags = Diagnostics(sources=dict(sketch.sources))
    examples = [(example.span, "an example") for world in sketch.worlds for example in world.examples]
    for span, what in sketch.learning_directives() + examples:
        diags.error(span, f"{what} in a rules file (it may hold rules and declarations only)")
    rules = []
    unmangle = exported_names(program)
    for clause in (c for w in sketch.worlds for c in w.clauses):
        clause = unmangle(clause)
        if not clause.body:
            diags.error(clause.span, "a fact in a rules file: facts come from the sketch")
            continue
        if _rule_ok(clause, program, diags):
            rules.append(to_rule(clause, symbols))
    if not diags and len(symbols.values) != len(program.symbols):
        diags.error(Span(path, 1, 1), "the rules mention constants that the sketch does not have")
    if diags:
        raise CompileError(diags)
    return rules


def exported_names(program: CompiledProgram) -> Callable[[ast.Clause], ast.Clause]:
    """A clause with each relation name that export changed for Soufflé/clingo (``Gp`` written ``r_Gp``, see
    :class:`nlndl.datalog.Names`) read back as the sketch's name, so that nlndl's own output checks."""
    back = {new: old for old, new in Names.for_program(program).forward.items() if new != old}
    back = {new: old for new, old in back.items() if new not in program.relations}

    def atom(a: ast.Atom) -> ast.Atom:
        return replace(a, predicate=back[a.predicate]) if a.predicate in back else a

    def clause(c: ast.Clause) -> ast.Clause:
        if not back:
            return c
        body = tuple(replace(lit, atom=atom(lit.atom)) for lit in c.body)
        return replace(c, head=atom(c.head), body=body)

    return clause


def _rule_ok(clause, program: CompiledProgram, diags: Diagnostics) -> bool:
    """Report what makes ``clause`` unfit to run on the sketch: unknown relations, wrong arities or constant
    types, a head that is not learned, unsafe variables."""
    errors = len(diags.errors)
    for atom in (clause.head, *(lit.atom for lit in clause.body)):
        relation = program.relations.get(atom.predicate)
        if relation is None:
            diags.error(atom.span, f"relation {atom.predicate} is not in the sketch")
            continue
        types = relation["types"]
        if len(atom.args) != len(types):
            expected = f"expected {len(types)}, got {len(atom.args)}"
            diags.error(atom.span, f"mismatching arity of relation {atom.predicate} ({expected})")
            continue
        for position, (arg, type_name) in enumerate(zip(atom.args, types, strict=True)):
            base = program.types.get(type_name, type_name)  # every declared type maps to its base
            if isinstance(arg, ast.Const) and arg.is_number != (base == "number"):
                diags.error(arg.span, f"argument {position + 1} of {atom.predicate} is a {base}")
    if clause.head.predicate in program.relations and clause.head.predicate not in program.learned:
        diags.error(clause.head.span, f"rule for {clause.head.predicate}, which the sketch does not learn")
    for arg, place in unsafe_arguments(clause):
        if place == "anonymous head":
            diags.error(arg.span, "'_' in a rule head: a head argument must be a constant or a body variable")
        else:
            diags.error(arg.span, f"variable {arg.name} in the {place} is not bound by a positive body atom")
    return len(diags.errors) == errors
