"""The Python API: compile, train, export and check in a few lines, mirroring the CLI.

from nlndl import api
program = api.compile("examples/ilp/less_than/sketch.dl")
result = api.train(program, seed=0)
print(result.solved, result.rule_texts())
api.export(result, program, "out", name="lt")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from nlndl.compiler import ast, compile_sketch
from nlndl.compiler.check import unsafe_arguments
from nlndl.compiler.crisp import Rule
from nlndl.compiler.diagnostics import CompileError, Diagnostics, Span
from nlndl.compiler.ground import to_rule
from nlndl.compiler.ir import CompiledProgram
from nlndl.compiler.parser import parse_file
from nlndl.compiler.symbols import SymbolTable
from nlndl.export import write_program
from nlndl.learn import LearnConfig, LearnResult, learn
from nlndl.output import OutputDir
from nlndl.runtime.chain import ChainConfig
from nlndl.runtime.train import TrainConfig
from nlndl.verify import Score, clingo_score, crisp_score

__all__ = ["check", "compile", "export", "read_rules", "train"]


def compile(  # noqa: A001
    sketch: str | Path, fact_dir: str | Path | None = None, background: Sequence[str | Path] = (), **options
) -> CompiledProgram:
    """Parse, check and compile a sketch, with the rules of each ``background`` program (e.g. an earlier
    run's exported ``.dl``) added as background; raises CompileError with located diagnostics."""
    extra = tuple(Path(b) for b in background)
    return compile_sketch(Path(sketch), Path(fact_dir) if fact_dir else None, background=extra, **options)


def train(
    program: CompiledProgram | str | Path,
    seed: int = 0,
    restarts: int | None = None,
    max_iters: int | None = None,
    time_limit: float | None = None,
    device: str = "cpu",
    class_weight: str = ChainConfig.class_weight,
    noise: float | None = None,
    **kwargs,
) -> LearnResult:
    """Learn the sketch's predicates; ``result.solved`` means clingo verified the rules on every world.
    ``class_weight``: a positive example's weight in the loss (see ``ChainConfig.class_weight``); ``noise``:
    accept rules wrong on at most that fraction of the examples (``result.accepted``, ``result.score``)."""
    if not isinstance(program, CompiledProgram):
        program = compile(program, seed=seed)  # the seed draws sampled closed-world negatives too
    train_cfg = TrainConfig(seed=seed, time_limit=time_limit)
    if max_iters is not None:
        train_cfg = replace(train_cfg, max_iters=max_iters)
    chain_cfg = ChainConfig(restarts=restarts, class_weight=class_weight)  # restarts None: auto_restarts
    config = LearnConfig(train=train_cfg, chain=chain_cfg, device=device, noise=noise)
    return learn(program, config, **kwargs)


def export(result: LearnResult, program: CompiledProgram, out: str | Path, name: str, origin: str = "") -> list[Path]:
    """Write OUT/name.dl (Soufflé), OUT/name.lp (clingo) and each world's facts, as ``nlndl train`` does:
    replacing only files nlndl wrote there (OutputError otherwise), each file whole or not at all."""
    directory = OutputDir(Path(out))
    written = directory.publish(lambda staging: write_program(staging, name, program, result.rules, origin or name))
    return [directory.root / rel for rel in written]


def read_rules(path: Path, program: CompiledProgram, memory_limit: int | None = None) -> list[Rule]:
    """The rules of a Datalog file in the sketch syntax (e.g. an exported ``.dl``), checked against the sketch
    as a Datalog engine would: known relations with their arities and types, safe variables, rules only (its
    declarations and .input/.output lines are read and ignored). Raises CompileError with located errors."""
    sketch = parse_file(path, memory_limit=memory_limit)
    symbols = SymbolTable.from_json(program.symbols)
    diags = Diagnostics(sources=dict(sketch.sources))
    for items, what in (
        (sketch.learns, ".learn"),
        (sketch.closed, ".closed"),
        (sketch.functions, ".function"),
        (sketch.worlds[1:], ".world"),
        ([e for w in sketch.worlds for e in w.examples], "an example"),
    ):
        for item in items:
            span = item[1] if isinstance(item, tuple) else item.span
            diags.error(span, f"{what} in a rules file (it may hold rules and declarations only)")
    if sketch.steps is not None:
        diags.error(sketch.steps[1], ".steps in a rules file (it may hold rules and declarations only)")
    rules = []
    for clause in (c for w in sketch.worlds for c in w.clauses):
        if not clause.body:
            diags.error(clause.span, "a fact in a rules file: facts come from the sketch")
            continue
        if _rule_ok(clause, program, diags):
            rules.append(to_rule(clause, symbols))
    if not diags and len(symbols.values) != len(program.symbols):
        diags.error(Span(str(path), 1, 1), "the rules mention constants that the sketch does not have")
    if diags:
        raise CompileError(diags)
    return rules


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


def check(rules: str | Path, sketch: str | Path | CompiledProgram) -> tuple[Score, Score]:
    """Run ``rules`` on the sketch's worlds: (crisp evaluator score, clingo score)."""
    program = sketch if isinstance(sketch, CompiledProgram) else compile(sketch)
    parsed = read_rules(Path(rules), program)
    return crisp_score(program, parsed), clingo_score(program, parsed)
