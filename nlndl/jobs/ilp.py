"""The sketch verbs as library functions: ``nlndl compile``, ``train`` (with its checkpoint and record),
``export`` and ``check``."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nlndl import __version__
from nlndl.bounded import Unfinished, bounded
from nlndl.compiler import DEFAULT_MEMORY_LIMIT, Grounded, check_options, compile_sketch, ground_sketch
from nlndl.compiler.ir import CompiledProgram
from nlndl.defaults import (
    CLASS_WEIGHTS,
    MAX_ITERS,
    OUTPUT_DIR,
    SUBGRAPH,
    SUBGRAPH_WORK,
    TRAIN_MEMORY_BYTES,
)
from nlndl.errors import Interrupted, JobError
from nlndl.export import clingo_text, planned_paths, souffle_text, write_program
from nlndl.jobs import changed_files, check_device, from_record, read_record, recorded_path
from nlndl.output import OutputDir, OutputError
from nlndl.rules import read_rules, rules_from_text
from nlndl.verify import Score, clingo_score

if TYPE_CHECKING:
    from nlndl.learn import LearnConfig, LearnResult
    from nlndl.runtime.collective import Collective


def compile_program(
    sketch: Path,
    fact_dir: Path | None = None,
    *,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    steps: int | None = None,
    background: Sequence[Path] = (),
    seed: int = 0,
    layout: str = "auto",
    subgraph: int | str | None = None,
    shard: tuple[int, int] = (0, 1),
) -> CompiledProgram:
    """Parse, check and compile a sketch (CompileError with every located diagnostic)."""
    return compile_sketch(
        Path(sketch),
        Path(fact_dir) if fact_dir else None,
        memory_limit=memory_limit,
        steps=steps,
        background=tuple(Path(b) for b in background),
        seed=seed,
        layout=layout,
        subgraph=subgraph,
        shard=shard,
    )


def checkpoint_name(stem: str) -> str:
    """The directory, inside the output directory, of an unfinished run's checkpoint."""
    return f"{stem}.checkpoint"


TRAINED_ON = "inputs.json"  # in a checkpoint directory: what the run was trained on


def trained_on(program: CompiledProgram) -> dict:
    """What a checkpoint records of its run's inputs: every file the compiler read, by SHA-256."""
    return {"inputs": program.inputs}


def changed_inputs(checkpoint: Path, program: CompiledProgram) -> list[str]:
    """What differs between the inputs ``checkpoint`` was trained on and ``program``'s (empty: the same)."""
    try:
        saved = json.loads((checkpoint / TRAINED_ON).read_text())["inputs"]
        if not isinstance(saved, dict):
            raise TypeError
    except FileNotFoundError:
        return [f"{TRAINED_ON} is missing, so what it was trained on is unknown"]
    except (OSError, ValueError, KeyError, TypeError):
        return [f"{TRAINED_ON} is damaged, so what it was trained on is unknown"]
    return changed_files(saved, program.inputs)


def _unusable(checkpoint: Path, exc: Exception) -> JobError:
    return JobError(f"{checkpoint}: error: checkpoint is unusable: {exc}; it was left as it was")


@dataclass
class TrainRun:
    """A finished ``train``: the result, the record written as <stem>.json, and the files written."""

    stem: str
    result: LearnResult
    record: dict
    written: list[Path]


@dataclass
class TrainPlan:
    """A ``train`` with everything checked (sketch compiled, output paths writable, checkpoint readable, memory
    fitted), ready to run."""

    sketch: Path
    program: CompiledProgram
    stem: str
    out: OutputDir
    config: LearnConfig
    resume: bool
    record: dict
    notes: list[str] = field(default_factory=list)  # what was changed to fit the memory limit
    collective: Collective | None = None  # the processes sharing the examples under torchrun (None: alone)
    faster: str | None = None  # a whole world's --subgraph, said where its iterations are slow (Prepared.faster)

    @property
    def leader(self) -> bool:
        """Whether this process reports and writes (the only one, or torchrun's rank 0)."""
        return self.collective is None or self.collective.leader

    @property
    def checkpoint(self) -> Path:
        return self.out.root / checkpoint_name(self.stem)

    def run(self, progress: Callable | None = None) -> TrainRun:
        """Train, verify with clingo and write <stem>.dl, <stem>.lp, the facts and <stem>.json; a checkpoint is
        kept while the run is unsolved (Interrupted on Ctrl-C, after saving it). ``progress.say``, where it has
        one (nlndl.progress.training_bar), is told when a subgraph grows."""
        from nlndl.allocator import resume_collector
        from nlndl.learn import learn
        from nlndl.runtime.train import CheckpointError

        resume_collector()  # paused by the CLI for the imports, if it was (nlndl.allocator)
        relative = checkpoint_name(self.stem)

        def save_checkpoint(trainer) -> None:
            def write(staging: Path) -> None:
                trainer.save(staging / relative)
                (staging / relative / TRAINED_ON).write_text(json.dumps(trained_on(self.program), indent=1) + "\n")

            self.out.publish(write)

        try:
            result = learn(
                self.program,
                self.config,
                progress if self.leader else None,
                resume=self.checkpoint if self.resume else None,
                checkpoint=save_checkpoint,
                collective=self.collective,
                notify=getattr(progress, "say", None) if self.leader else None,
            )
        except KeyboardInterrupt as exc:
            message = f"interrupted: checkpoint saved to {self.checkpoint}; continue with --resume"
            raise Interrupted.of(exc, message) from None
        except CheckpointError as exc:
            raise _unusable(self.checkpoint, exc) from None
        except OutputError as exc:
            raise JobError(f"{exc}\n(the checkpoint could not be saved; what was there is unchanged)") from None
        record = {**self.record, **result.to_json()}

        def write_results(staging: Path) -> None:
            write_program(staging, self.stem, self.program, result.rules, str(self.sketch))
            (staging / f"{self.stem}.json").write_text(json.dumps(record, indent=1) + "\n")

        written = []
        try:
            if self.leader:
                written = self.out.publish(write_results)
                if result.solved:
                    self.out.remove_tree(relative)
        except OutputError as exc:
            raise JobError("\n".join(["rules learned (not saved):", *result.rule_texts(), str(exc)])) from None
        finally:
            if self.collective is not None:  # the other processes wait until rank 0 has written
                self.collective.barrier()
        return TrainRun(self.stem, result, record, [self.out.root / rel for rel in written])


@dataclass
class Prepared:
    """A sketch compiled for training with the settings that train it, fitted to the memory limit, and what
    was decided for the user to read (a subgraph chosen, fewer restarts)."""

    program: CompiledProgram
    config: LearnConfig
    notes: list[str]
    collective: Collective
    subgraph: int | str | None  # the --subgraph trained with (None under torchrun, which never samples one)
    background: list[Path]  # the background programs read
    faster: str | None = None  # where --subgraph auto trained a world whole: the --subgraph that samples it


def training_config(
    program: CompiledProgram,
    *,
    seed: int = 0,
    restarts: int | None = None,
    max_iters: int = MAX_ITERS,
    time_limit: float | None = None,
    device: str = "cpu",
    class_weight: str = CLASS_WEIGHTS[0],
    memory_limit: int = TRAIN_MEMORY_BYTES,
    noise: float | None = None,
    validation: float | None = None,
    grow: Callable | None = None,
    collective: Collective | None = None,
    origin: str | None = None,
) -> tuple[LearnConfig, list[str]]:
    """The settings ``nlndl train`` trains ``program`` with, fitted into ``memory_limit`` (learn.fit), and what
    the fit changed; ``noise`` None takes the sketch's ``.noise``. JobError, located at ``origin`` (the sketch),
    when nothing fits."""
    from nlndl.learn import LearnConfig, fit
    from nlndl.runtime.budget import BudgetError
    from nlndl.runtime.config import ChainConfig
    from nlndl.runtime.train import TrainConfig

    config = LearnConfig(
        train=TrainConfig(seed=seed, max_iters=max_iters, time_limit=time_limit),
        chain=ChainConfig(restarts=restarts, class_weight=class_weight),  # restarts None: auto_restarts
        device=device,
        memory_limit=memory_limit,
        noise=noise if noise is not None else program.noise,  # --noise, else the sketch's .noise
        validation=validation,
        grow=grow,
    )
    try:
        return fit(program, config, collective)
    except BudgetError as exc:
        raise JobError(f"{origin or next(iter(program.inputs), '<program>')}: error: {exc}") from None


def prepare_training(
    sketch: Path,
    fact_dir: Path | None = None,
    *,
    seed: int = 0,
    restarts: int | None = None,
    max_iters: int = MAX_ITERS,
    time_limit: float | None = None,
    steps: int | None = None,
    device: str = "cpu",
    class_weight: str = CLASS_WEIGHTS[0],
    memory_limit: int = TRAIN_MEMORY_BYTES,
    background: Sequence[Path] = (),
    layout: str = "auto",
    subgraph: int | str | None = SUBGRAPH,
    noise: float | None = None,
    validation: float | None = None,
) -> Prepared:
    """A sketch compiled and its training settled, as ``nlndl train`` runs it before it writes anything (and
    ``bench ilp`` and ``api.train`` run it too): compile with sampled negatives drawn from ``seed``, a
    subgraph where ``subgraph`` asks or (auto) the world is too large, and fit ``memory_limit``.

    Under ``torchrun --nproc-per-node N`` each process compiles its share of the examples (with the atoms their
    substitutions read) and trains every restart on it, the gradients summed; rank 0 verifies and writes."""
    from nlndl.distributed import process_rank

    check_device(device)
    sketch, background = Path(sketch), [Path(b) for b in background]
    collective = process_rank(device)
    if collective.size > 1 and (isinstance(subgraph, int) or validation):
        option = "--subgraph" if isinstance(subgraph, int) else "--validation"
        raise JobError(f"{sketch}: error: {option} is not supported with several processes (torchrun)")
    check_options(layout, subgraph, (collective.rank, collective.size))
    grounded = ground_sketch(sketch, Path(fact_dir) if fact_dir else None, memory_limit, tuple(background))
    subgraph = subgraph if collective.size == 1 else None  # auto: never with several processes
    noisy = None if noise is None else noise > 0  # None: the sketch's .noise
    program = grounded.lower(steps, seed, layout, subgraph, (collective.rank, collective.size), noisy=noisy)
    if collective.size > 1:  # every shard's warnings, each of its own examples, said by rank 0
        parts = collective.gather(program.warnings) or []
        program.warnings = list(dict.fromkeys(w for part in parts for w in part))
        if len(parts) > 1 and any(parts[1:]):
            program.warnings.append(
                f"(the warnings above are each process's, of its share of the examples: {collective.size} shares)"
            )
    if validation and program.whole:
        raise JobError(
            f"{sketch}: error: --validation and --subgraph together are not supported (the whole worlds "
            "that judge a subgraph's rules hold every example)"
            + ("; --subgraph auto chose a subgraph: pass --subgraph none" if subgraph == "auto" else "")
        )
    notes = []
    if subgraph == "auto" and program.whole:
        notes.append(
            f"--subgraph auto: a world is too large to train whole (over {SUBGRAPH_WORK:,} index entries x steps), "
            "so training sees a subgraph grown from counterexamples until the rules hold on the whole world "
            "(--subgraph none: the whole world)"
        )
    if validation:
        from nlndl.holdout import held_counts

        held = held_counts(program, validation)
        if not any(held):
            raise JobError(
                f"{sketch}: error: --validation {validation:g} holds out no example: a fraction of each class is "
                "rounded down, and every class is too small; ask for a larger fraction"
            )
        for count, cls in zip(held, ("positive", "negative"), strict=True):
            if not count:
                notes.append(f"--validation {validation:g} holds out no {cls} example (too few to take a fraction)")
    config, fitted = training_config(
        program, seed=seed, restarts=restarts, max_iters=max_iters, time_limit=time_limit, device=device,
        class_weight=class_weight, memory_limit=memory_limit, noise=noise, validation=validation,
        grow=grounded.grow if program.whole else None, collective=collective, origin=str(sketch),
    )  # fmt: skip
    faster = None
    if subgraph == "auto" and not program.whole:
        faster = faster_subgraph(grounded)
    return Prepared(program, config, notes + fitted, collective, subgraph, background, faster)


def faster_subgraph(grounded: Grounded) -> str | None:
    """For a sketch that ``--subgraph auto`` trains whole: the option that trains it on a subgraph of the size
    auto would sample (compiler.subgraph.auto_entities), said where its largest world holds more constants."""
    from nlndl.compiler.subgraph import auto_entities, constants

    if not grounded.checked.learned:
        return None
    size = auto_entities(grounded.checked)
    most = max((constants(w).size for w in grounded.worlds), default=0)
    if most <= size:
        return None
    return (
        f"--subgraph {size} trains on {size} of its {most:,} constants, grown from counterexamples until the "
        "rules hold on the whole world"
    )


def plan_training(
    sketch: Path,
    fact_dir: Path | None = None,
    output: Path = Path(OUTPUT_DIR),
    *,
    resume: bool = False,
    **options: Any,
) -> TrainPlan:
    """Everything ``nlndl train`` checks before it trains: compile the sketch and settle its training
    (:func:`prepare_training`, which takes ``options``), check every output path (files nlndl derives may
    replace what nlndl wrote there, never anything else) and the checkpoint to resume from."""
    from nlndl.runtime.train import CheckpointError, read_checkpoint

    sketch = Path(sketch)
    prepared = prepare_training(sketch, fact_dir, **options)
    program = prepared.program
    stem = "_".join(sorted(program.learned)) or sketch.stem
    relative = checkpoint_name(stem)
    checkpoint = Path(output) / relative
    if resume:
        if not (checkpoint / "checkpoint.json").is_file():
            raise JobError(f"{checkpoint}: error: no checkpoint to resume from")
        try:
            read_checkpoint(checkpoint)
        except CheckpointError as exc:
            raise _unusable(checkpoint, exc) from None
        changed = changed_inputs(checkpoint, program)
        if changed:
            raise JobError(
                f"{checkpoint}: error: cannot resume: it was trained on other inputs ({'; '.join(changed[:5])}"
                f"{'; ...' if len(changed) > 5 else ''}); it was left as it was: run without --resume to start over"
            )
    files, dirs = planned_paths(stem, program)
    saved = [f"{relative}/checkpoint.json", f"{relative}/checkpoint.safetensors", f"{relative}/{TRAINED_ON}"]
    out = OutputDir(Path(output), "train", [*program.inputs, sketch, *prepared.background])
    if resume:
        out.adopted.update(saved)  # the checkpoint continued from is replaced by its continuation
    out.check([*files, f"{stem}.json", *saved], [*dirs, relative])
    fact_dir = Path(fact_dir) if fact_dir else None
    record = {
        "nlndl": __version__,
        "sketch": from_record(sketch, out.root),  # relative to the record's directory, so that both may move
        "fact_dir": from_record(fact_dir, out.root) if fact_dir else None,
        "background": [from_record(b, out.root) for b in prepared.background],
        "seed": prepared.config.train.seed,
        "class_weight": prepared.config.chain.class_weight,
        "subgraph": prepared.subgraph,
        "validation_fraction": prepared.config.validation,
        "processes": prepared.collective.size,
    }
    return TrainPlan(
        sketch, program, stem, out, prepared.config, resume, record, prepared.notes, prepared.collective,
        prepared.faster,
    )  # fmt: skip


def export_text(results: Path, dialect: str = "souffle") -> str:
    """The rules a ``train`` recorded in ``results``, as Soufflé (``.dl``) or clingo (``.lp``) Datalog. The
    sketch is compiled again (with the subgraph trained on, cheap where the whole world is not) for its names."""
    record = read_record(results)
    sketch = recorded_path(results, record["sketch"])
    if not sketch.exists():
        raise JobError(f"{results}: error: its sketch {sketch} no longer exists")
    program = compile_program(
        sketch,
        recorded_path(results, record["fact_dir"]) if record.get("fact_dir") else None,
        background=[recorded_path(results, b) for b in record.get("background", [])],
        seed=int(record.get("seed", 0)),
        subgraph=record.get("subgraph"),
    )
    rules = rules_from_text("\n".join(record["rules"]) + "\n", program, f"{results}#rules")
    render = souffle_text if dialect == "souffle" else clingo_text
    return render(program, rules, str(sketch))


def check_rules(
    rules: Path,
    sketch: Path | CompiledProgram,
    fact_dir: Path | None = None,
    background: Sequence[Path] = (),
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    time_limit: float | None = None,
) -> Score:
    """Run a rules file on a sketch's worlds with clingo: the examples they get right and wrong. clingo runs in
    a child process (:mod:`nlndl.bounded`), stopped where it grows by more than ``memory_limit`` or runs past
    ``time_limit`` seconds (a JobError), and by Ctrl-C, which its grounding would not heed."""
    program = sketch
    if not isinstance(sketch, CompiledProgram):
        program = compile_program(sketch, fact_dir, background=background, memory_limit=memory_limit)
    checked = read_rules(Path(rules), program, memory_limit=memory_limit)
    try:
        return bounded(lambda: clingo_score(program, checked), time_limit, memory_limit)
    except Unfinished as exc:
        option = "--time-limit" if exc.timed else "--memory-limit"
        raise JobError(f"{rules}: error: clingo's check {exc} ({option})") from None
