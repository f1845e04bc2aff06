"""The Python API: everything the CLI does, in a few lines.

from nlndl import api
program = api.compile("examples/ilp/less_than/sketch.dl")
result = api.train(program, seed=0)
print(result.solved, result.rule_texts())
api.export("out", "lt", program, result)
print(api.check("out/lt.dl", program).clingo.solved)

``api.plan_training(sketch, output).run()`` is ``nlndl train`` whole (output checks, checkpoint, results JSON);
the LDPC and knowledge-graph verbs are here too, and each benchmark is ``nlndl.bench.<name>.run``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from nlndl.compiler import SketchText, compile_sketch
from nlndl.compiler.ir import CompiledProgram
from nlndl.defaults import CLASS_WEIGHTS, MAX_ITERS, SUBGRAPH, TRAIN_MEMORY_BYTES
from nlndl.errors import JobError, NlndlError
from nlndl.export import write_program
from nlndl.jobs.ilp import TrainPlan, TrainRun, export_text, plan_training, prepare_training, training_config
from nlndl.jobs.kg import predict_kg, rank_kg, score_ranking, train_kg, write_kg_sketch
from nlndl.jobs.ldpc import evaluate_ldpc_decoder, saved_tanner_graph, tanner_graph, train_ldpc_decoder
from nlndl.learn import LearnResult, learn
from nlndl.output import OutputDir
from nlndl.rules import read_rules
from nlndl.verify import Score, clingo_score, crisp_score

__all__ = [
    "Check",
    "JobError",
    "NlndlError",
    "TrainPlan",
    "TrainRun",
    "check",
    "compile",
    "compile_text",
    "evaluate_ldpc_decoder",
    "export",
    "export_text",
    "plan_training",
    "prepare_training",
    "predict_kg",
    "rank_kg",
    "read_rules",
    "saved_tanner_graph",
    "score_ranking",
    "tanner_graph",
    "train",
    "train_kg",
    "train_ldpc_decoder",
    "training_config",
    "write_kg_sketch",
]


def compile(  # noqa: A001
    sketch: str | Path, fact_dir: str | Path | None = None, background: Sequence[str | Path] = (), **options
) -> CompiledProgram:
    """Parse, check and compile a sketch, with the rules of each ``background`` program (e.g. an earlier
    run's exported ``.dl``) added as background; raises CompileError with located diagnostics. ``options``:
    those of :func:`nlndl.compiler.compile_sketch` (memory_limit, steps, seed, layout, subgraph)."""
    extra = tuple(Path(b) for b in background)
    return compile_sketch(Path(sketch), Path(fact_dir) if fact_dir else None, background=extra, **options)


def compile_text(
    text: str, facts: Mapping[str, str] | None = None, name: str = "<sketch>", **options
) -> CompiledProgram:
    """:func:`compile` of a sketch held in memory: ``facts`` holds, by relation, the text of each ``.input``
    relation's facts file; diagnostics are located in ``name`` (and ``name#relation.facts``)."""
    return compile_sketch(SketchText(text, name, dict(facts or {})), **options)


def train(
    program: CompiledProgram | str | Path,
    seed: int = 0,
    restarts: int | None = None,
    max_iters: int = MAX_ITERS,
    time_limit: float | None = None,
    device: str = "cpu",
    class_weight: str = CLASS_WEIGHTS[0],
    noise: float | None = None,
    validation: float | None = None,
    fact_dir: str | Path | None = None,
    background: Sequence[str | Path] = (),
    subgraph: int | str | None = SUBGRAPH,
    memory_limit: int = TRAIN_MEMORY_BYTES,
    **kwargs,
) -> LearnResult:
    """Learn the sketch's predicates as ``nlndl train`` does, without writing files; ``result.solved`` means
    clingo verified the rules on every world. A sketch path is compiled and its training settled by the same
    function as ``nlndl train`` (:func:`nlndl.jobs.prepare_training`: sampled negatives drawn from ``seed``,
    ``fact_dir`` and ``background`` read, ``subgraph`` auto by default, grown from counterexamples until the
    rules hold on the whole world); a compiled program is trained as it is. Either way training is fitted
    into ``memory_limit`` bytes. ``class_weight``: a positive example's weight in the loss (see
    ``ChainConfig.class_weight``); ``noise``: accept rules wrong on at most that fraction of the examples
    (``result.accepted``, ``result.score``); ``validation``: hold out that fraction of each class of examples,
    drawn with ``seed``, and score the rules on them (``result.validation``, by clingo); ``kwargs``: those of
    :func:`nlndl.learn.learn` (progress, resume, checkpoint, notify: told each growth step of a subgraph)."""
    settings = dict(
        seed=seed, restarts=restarts, max_iters=max_iters, time_limit=time_limit, device=device,
        class_weight=class_weight, memory_limit=memory_limit, noise=noise, validation=validation,
    )  # fmt: skip
    if isinstance(program, CompiledProgram):
        config, _ = training_config(program, **settings)
        return learn(program, config, **kwargs)
    prepared = prepare_training(
        Path(program), Path(fact_dir) if fact_dir else None, background=[Path(b) for b in background],
        subgraph=subgraph, **settings,
    )  # fmt: skip
    return learn(prepared.program, prepared.config, collective=prepared.collective, **kwargs)


def export(out: str | Path, name: str, program: CompiledProgram, result: LearnResult, origin: str = "") -> list[Path]:
    """Write OUT/name.dl (Soufflé), OUT/name.lp (clingo) and each world's facts, as ``nlndl train`` does:
    replacing only files nlndl wrote there (OutputError otherwise), each file whole or not at all."""
    directory = OutputDir(Path(out), "train", program.inputs)
    written = directory.publish(lambda staging: write_program(staging, name, program, result.rules, origin or name))
    return [directory.root / rel for rel in written]


class Check(NamedTuple):
    """How rules score on a sketch's examples: by nlndl's own crisp evaluator and by clingo."""

    crisp: Score
    clingo: Score


def check(rules: str | Path, sketch: str | Path | CompiledProgram) -> Check:
    """Run a rules file on the sketch's worlds, with nlndl's crisp evaluator and with clingo."""
    program = sketch if isinstance(sketch, CompiledProgram) else compile(sketch)
    parsed = read_rules(Path(rules), program)
    return Check(crisp_score(program, parsed), clingo_score(program, parsed))
