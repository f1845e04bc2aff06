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

from nlndl.compiler import compile_sketch
from nlndl.compiler.crisp import Rule
from nlndl.compiler.diagnostics import CompileError, Diagnostics, Span
from nlndl.compiler.ground import to_rule
from nlndl.compiler.ir import CompiledProgram
from nlndl.compiler.parser import parse_file
from nlndl.compiler.symbols import SymbolTable
from nlndl.export import write_program
from nlndl.learn import LearnConfig, LearnResult, learn
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
    **kwargs,
) -> LearnResult:
    """Learn the sketch's predicates; ``result.solved`` means clingo verified the rules on every world.
    ``class_weight``: a positive example's weight in the loss (see ``ChainConfig.class_weight``)."""
    if not isinstance(program, CompiledProgram):
        program = compile(program)
    train_cfg = TrainConfig(seed=seed, time_limit=time_limit)
    if max_iters is not None:
        train_cfg = replace(train_cfg, max_iters=max_iters)
    chain_cfg = ChainConfig(restarts=restarts, class_weight=class_weight)  # restarts None: auto_restarts
    return learn(program, LearnConfig(train=train_cfg, chain=chain_cfg, device=device), **kwargs)


def export(result: LearnResult, program: CompiledProgram, out: str | Path, name: str, origin: str = "") -> list[Path]:
    """Write OUT/name.dl (Soufflé), OUT/name.lp (clingo) and each world's facts."""
    return write_program(Path(out), name, program, result.rules, origin or name)


def read_rules(path: Path, program: CompiledProgram) -> list[Rule]:
    """Rules (clauses with a body) of a Datalog file in the sketch syntax, e.g. an exported ``.dl``."""
    sketch = parse_file(path)
    symbols = SymbolTable.from_json(program.symbols)
    diags = Diagnostics(sources=dict(sketch.sources))
    rules = []
    for clause in (c for w in sketch.worlds for c in w.clauses):
        if not clause.body:
            continue
        for atom in (clause.head, *(lit.atom for lit in clause.body)):
            if atom.predicate not in program.relations:
                diags.error(atom.span, f"relation {atom.predicate} is not in the sketch")
        rules.append(to_rule(clause, symbols))
    if len(symbols.values) != len(program.symbols):
        diags.error(Span(str(path), 1, 1), "the rules mention constants that the sketch does not have")
    if diags:
        raise CompileError(diags)
    return rules


def check(rules: str | Path, sketch: str | Path | CompiledProgram) -> tuple[Score, Score]:
    """Run ``rules`` on the sketch's worlds: (crisp evaluator score, clingo score)."""
    program = sketch if isinstance(sketch, CompiledProgram) else compile(sketch)
    parsed = read_rules(Path(rules), program)
    return crisp_score(program, parsed), clingo_score(program, parsed)
