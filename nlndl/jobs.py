"""The jobs behind the CLI's verbs, as library functions: what each verb computes and writes, with every check
done before the long work starts. No printing and no exit codes (the CLI's business): what a user can act on is
raised as a :class:`JobError`, a ``CompileError`` or an ``OutputError``, each with its located message. Torch is
imported by the jobs that train, not by this module, so that compiling and checking start fast."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nlndl import __version__
from nlndl.compiler import DEFAULT_MEMORY_LIMIT, check_options, compile_sketch, ground_sketch
from nlndl.compiler.diagnostics import Diagnostics, size_text
from nlndl.compiler.ir import CompiledProgram
from nlndl.compiler.tanner import MatrixError, TannerGraph, read_matrix, regular_code
from nlndl.compiler.triples import KGSketch, kg_sketch
from nlndl.defaults import (
    CLASS_WEIGHTS,
    KG_COUNTED_RULES,
    KG_NEGATIVES,
    KG_PATH_LENGTH,
    KG_VARS,
    MAX_ITERS,
    OUTPUT_DIR,
    SUBGRAPH,
    SUBGRAPH_WORK,
    TRAIN_MEMORY_BYTES,
)
from nlndl.errors import Interrupted, JobError
from nlndl.export import clingo_text, planned_paths, souffle_text, write_program
from nlndl.output import OutputDir, OutputError
from nlndl.rules import read_rules, rules_from_text
from nlndl.verify import Score, clingo_score

if TYPE_CHECKING:
    from nlndl.decoders import DecoderTraining
    from nlndl.learn import LearnConfig, LearnResult
    from nlndl.runtime.collective import Collective

PROGRAM_FILES = ["program.json", "arrays.safetensors"]  # what ``compile -o`` and ``ldpc compile -o`` write


def check_device(device: str) -> None:
    """``device`` is cpu, cuda or cuda:N (ValueError otherwise), and a CUDA device exists when asked for."""
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise ValueError(f"--device {device}: expected cpu or cuda")
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise JobError(f"error: --device {device}: no CUDA device is available (torch {torch.__version__})")


def output_dir(
    path: Path, files: Sequence[str] = PROGRAM_FILES, dirs: Sequence[str] = (), writer: str | None = None
) -> OutputDir:
    """The directory ``path``, checked before the work: ``files`` may replace an earlier output of the same
    ``writer`` (the command) there, nothing else (OutputError)."""
    directory = OutputDir(path, writer)
    directory.check(list(files), list(dirs))
    return directory


def save(directory: OutputDir, write: Callable[[Path], None], files: Sequence[str] = PROGRAM_FILES) -> None:
    """Write an artefact into ``directory`` whole or not at all, replacing only nlndl's earlier one."""
    directory.publish(write, expected=list(files))


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


def changed_files(then: dict[str, str], now: dict[str, str]) -> list[str]:
    """What differs between two records of files by SHA-256 (name -> digest): changed, new, gone."""
    out = [f"{name} changed" for name in sorted(set(then) & set(now)) if then[name] != now[name]]
    out += [f"{name} is read now and was not then" for name in sorted(set(now) - set(then))]
    out += [f"{name} was read then and is not now" for name in sorted(set(then) - set(now))]
    return out


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

    @property
    def leader(self) -> bool:
        """Whether this process reports and writes (the only one, or torchrun's rank 0)."""
        return self.collective is None or self.collective.leader

    @property
    def checkpoint(self) -> Path:
        return self.out.root / checkpoint_name(self.stem)

    def run(self, progress: Callable | None = None) -> TrainRun:
        """Train, verify with clingo and write <stem>.dl, <stem>.lp, the facts and <stem>.json; a checkpoint is
        kept while the run is unsolved (Interrupted on Ctrl-C, after saving it)."""
        from nlndl.learn import learn
        from nlndl.runtime.budget import BudgetError
        from nlndl.runtime.train import CheckpointError

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
            )
        except KeyboardInterrupt as exc:
            message = f"interrupted: checkpoint saved to {self.checkpoint}; continue with --resume"
            raise Interrupted.of(exc, message) from None
        except CheckpointError as exc:
            raise _unusable(self.checkpoint, exc) from None
        except BudgetError as exc:
            raise JobError(f"{self.sketch}: error: {exc}") from None
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


def plan_training(
    sketch: Path,
    fact_dir: Path | None = None,
    output: Path = Path(OUTPUT_DIR),
    *,
    seed: int = 0,
    restarts: int | None = None,
    max_iters: int = MAX_ITERS,
    time_limit: float | None = None,
    steps: int | None = None,
    device: str = "cpu",
    class_weight: str = CLASS_WEIGHTS[0],
    resume: bool = False,
    memory_limit: int = TRAIN_MEMORY_BYTES,
    background: Sequence[Path] = (),
    layout: str = "auto",
    subgraph: int | str | None = SUBGRAPH,
    noise: float | None = None,
    validation: float | None = None,
) -> TrainPlan:
    """Everything ``nlndl train`` checks before it trains: compile the sketch, check every output path (files
    nlndl derives may replace what nlndl wrote there, never anything else), the checkpoint to resume from, and
    fit training into ``memory_limit`` (recomputed steps, or fewer restarts when none were asked for).

    Under ``torchrun --nproc-per-node N`` each process compiles its share of the examples (with the atoms their
    substitutions read) and trains every restart on it, the gradients summed; rank 0 verifies and writes."""
    from nlndl.distributed import process_rank
    from nlndl.learn import LearnConfig
    from nlndl.runtime.budget import BudgetError, agree, fit_training
    from nlndl.runtime.config import ChainConfig
    from nlndl.runtime.train import CheckpointError, TrainConfig, read_checkpoint

    check_device(device)
    sketch, background = Path(sketch), [Path(b) for b in background]
    collective = process_rank(device)
    if collective.size > 1 and (isinstance(subgraph, int) or validation):
        option = "--subgraph" if isinstance(subgraph, int) else "--validation"
        raise JobError(f"{sketch}: error: {option} is not supported with several processes (torchrun)")
    check_options(layout, subgraph, (collective.rank, collective.size))
    grounded = ground_sketch(sketch, Path(fact_dir) if fact_dir else None, memory_limit, tuple(background))
    subgraph = subgraph if collective.size == 1 else None  # auto: never with several processes
    program = grounded.lower(steps, seed, layout, subgraph, (collective.rank, collective.size))
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
    out = OutputDir(Path(output), "train", [*program.inputs, sketch, *background])
    if resume:
        out.adopted.update(saved)  # the checkpoint continued from is replaced by its continuation
    out.check([*files, f"{stem}.json", *saved], [*dirs, relative])
    chain = ChainConfig(restarts=restarts, class_weight=class_weight).for_program(program)
    try:
        fitted = fit_training(program, chain, memory_limit, restarts is not None, collective)
        fitted = agree(fitted, collective)
        chain = agree(chain, collective)
    except BudgetError as exc:
        raise JobError(f"{sketch}: error: {exc}") from None
    if fitted != chain:
        changes = ["steps recomputed in the backward pass"] if fitted.recompute else []
        if fitted.restarts != chain.restarts:
            changes.append(f"{fitted.restarts} restarts instead of {chain.restarts}")
        notes.append(f"training within {size_text(memory_limit)}: {', '.join(changes)}")
    config = LearnConfig(
        train=TrainConfig(seed=seed, max_iters=max_iters, time_limit=time_limit),
        chain=fitted,
        device=device,
        memory_limit=memory_limit,
        noise=noise if noise is not None else program.noise,  # --noise, else the sketch's .noise
        validation=validation,
        grow=grounded.grow if program.whole else None,
    )
    record = {
        "nlndl": __version__,
        "sketch": from_record(sketch, out.root),  # relative to the record's directory, so that both may move
        "fact_dir": from_record(Path(fact_dir), out.root) if fact_dir else None,
        "background": [from_record(b, out.root) for b in background],
        "seed": seed,
        "class_weight": class_weight,
        "subgraph": subgraph,
        "validation_fraction": validation,
        "processes": collective.size,
    }
    return TrainPlan(sketch, program, stem, out, config, resume, record, notes, collective)


def from_record(path: Path, directory: Path) -> str:
    """``path`` as a record in ``directory`` names it: relative to that directory (absolute on another drive)."""
    try:
        return os.path.relpath(Path(path).resolve(), Path(directory).resolve())
    except ValueError:  # Windows: no relative path between drives
        return str(Path(path).resolve())


def recorded_path(results: Path, text: str) -> Path:
    """A path a record names, relative to the record's directory (older records hold absolute ones)."""
    return Path(results).parent / text


def read_record(results: Path) -> dict:
    """A <name>.json written by ``nlndl train``, its fields checked (JobError located at the file otherwise)."""
    try:
        record = json.loads(Path(results).read_text())
        if isinstance(record, dict) and "relations" in record and "closure" in record:
            raise JobError(
                f"{results}:1:1: error: this is the record of nlndl kg train, not of nlndl train: its rules are "
                f"already exported beside it, as {Path(results).parent / 'rules.dl'} (Soufflé) and "
                f"{Path(results).parent / 'rules.lp'} (clingo)"
            )
        rules, seed, subgraph = record["rules"], int(record.get("seed", 0)), record.get("subgraph")
        Path(record["sketch"])
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise TypeError("'rules' is not a list of strings")
        if seed < 0:
            raise ValueError(f"'seed' is negative ({seed})")
        if subgraph is not None and subgraph != "auto" and (not isinstance(subgraph, int) or subgraph < 2):
            raise TypeError("'subgraph' is not 'auto' or a whole number of at least 2")
        if not isinstance(record.get("background", []), list):
            raise TypeError("'background' is not a list")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise JobError(f"{results}:1:1: error: not a results file written by nlndl train ({exc})") from None
    return record


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
) -> Score:
    """Run a rules file on a sketch's worlds with clingo: the examples they get right and wrong."""
    program = sketch
    if not isinstance(sketch, CompiledProgram):
        program = compile_program(sketch, fact_dir, background=background, memory_limit=memory_limit)
    return clingo_score(program, read_rules(Path(rules), program, memory_limit=memory_limit))


def write_kg_sketch(
    directory: Path,
    target: str,
    output: Path,
    negatives: int = KG_NEGATIVES,
    seed: int = 0,
    variables: int = KG_VARS,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
) -> KGSketch:
    """Write OUTPUT/sketch.dl and the .facts files learning ``target`` of a graph (either layout)."""
    diags = Diagnostics()
    made = kg_sketch(Path(directory), target, diags, negatives, seed, variables, memory_limit)
    if made is None:
        raise JobError(diags.render())
    files = ["sketch.dl", *(f"{name}.facts" for name in made.facts)]
    out = output_dir(Path(output), files, writer="kg sketch")

    def write(staging: Path) -> None:
        (staging / "sketch.dl").write_text(made.text)
        for name, text in made.facts.items():
            (staging / f"{name}.facts").write_text(text)

    save(out, write, files)
    return made


def tanner_graph(matrix: Path | None = None, generate: str | None = None, seed: int = 0) -> TannerGraph:
    """The code of ``matrix`` (a located JobError on a bad file), else of ``generate`` "N,DV,DC" (ValueError on
    a bad specification)."""
    if matrix is not None:
        try:
            return TannerGraph.from_matrix(read_matrix(Path(matrix)), source=str(matrix))
        except MatrixError as exc:
            raise JobError(str(exc)) from None
    n, dv, dc = (int(x) for x in (generate or "").split(","))
    return regular_code(n, dv, dc, seed)


def saved_tanner_graph(directory: Path) -> TannerGraph:
    """The Tanner graph ``nlndl ldpc compile -D DIR`` saved (a located JobError on anything else)."""
    try:
        return TannerGraph.load(Path(directory))
    except ValueError as exc:
        raise JobError(f"{directory}: error: {exc}") from None


DECODER_FILES = ["decoder.json", "decoder.safetensors"]
CODEWORD_BYTES = 16  # per bit of a test codeword: the word, its erasures, channel messages and decisions
EVAL_MEMORY = 2 * 1024**3


def train_ldpc_decoder(
    output: Path,
    graph: TannerGraph,
    training: DecoderTraining | None = None,
    progress: Callable[[str], None] | None = None,
    memory_limit: int = TRAIN_MEMORY_BYTES,
) -> dict:
    """Train a recurrent erasure decoder on ``graph`` and save it to ``output`` (weights as safetensors, settings
    as JSON); the summary, with the formulas an NLN decoder learned."""
    from nlndl import decoders
    from nlndl.runtime.budget import BudgetError

    target = output_dir(Path(output), DECODER_FILES, writer="ldpc train")
    training = training or decoders.DecoderTraining()
    try:
        trained, history = decoders.train_decoder(graph, training, progress, memory_limit)
    except BudgetError as exc:
        raise JobError(f"error: {exc}") from None
    save(target, lambda staging: decoders.save_decoder(staging, trained, training, history), DECODER_FILES)
    summary = {k: v for k, v in history.items() if k != "curve"}
    summary["output"] = str(output)
    if trained.shape.kind == "nln":
        summary["formulas"] = decoders.formulas(trained)
    return summary


def evaluate_ldpc_decoder(
    directory: Path, graph: TannerGraph, eps: Sequence[float], ts: Sequence[int], codewords: int, seed: int = 0
) -> list[dict]:
    """BER and WER of the decoder saved in ``directory``, BP and ML on the same random codewords of ``graph``."""
    from nlndl import decoders

    try:
        trained, _ = decoders.load_decoder(Path(directory))
    except ValueError as exc:
        raise JobError(f"error: {exc}") from None
    need = codewords * int(graph.meta["n"]) * CODEWORD_BYTES
    if need > EVAL_MEMORY:
        raise JobError(
            f"error: --codewords {codewords:,} of length {graph.meta['n']} need about {need / 2**30:.1f} GiB "
            f"of codewords and erasures, over {EVAL_MEMORY / 2**30:.0f} GiB; use fewer --codewords"
        )
    try:
        return decoders.compare(graph, {trained.shape.kind: trained}, list(eps), list(ts), codewords, seed)
    except ValueError as exc:
        raise JobError(f"error: {exc}") from None


KG_FILES = ["rules.dl", "rules.lp", "rules.tsv", "facts.lp", "rules.json"]


@dataclass
class KGTraining:
    """What ``nlndl kg train`` learned and wrote: each relation's rules, and how clingo's closure of the
    exported program compares with nlndl's crisp evaluator's."""

    learned: list  # list[nlndl.kg.RelationRules]; empty on a torchrun rank other than 0, which writes nothing
    derived: int  # new triples (not known) the exported program derives, by clingo
    agree: bool  # clingo and the crisp evaluator derive the same triples
    files: list[Path]
    report: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # warnings found before the work (an earlier output left mixed)


def kg_output_files(graph: object, chosen: list[str]) -> list[str]:
    """Every file ``nlndl kg train`` writes for the ``chosen`` relations of ``graph`` (a ``nlndl.kg.Graph``)."""
    from nlndl.compiler.triples import sketch_identifiers
    from nlndl.datalog import Names

    held = set()
    for r in chosen:  # the identifiers each relation's sketch holds (kg_export writes a .facts file for each)
        held |= set(sketch_identifiers(graph.relations, r, True).values())  # with <r>_fact: a superset
    names = Names.for_relations(sorted(held))
    return [*KG_FILES, *(f"{names(i)}.facts" for i in sorted(held))]


KG_CHECKPOINT = "rules.checkpoint"  # in kg train's output directory: each relation learned so far


def kg_checkpoint_file(relation: str) -> str:
    """The checkpoint of one relation (its name hashed: a relation's name may be no file name)."""
    return f"{KG_CHECKPOINT}/{hashlib.sha256(relation.encode()).hexdigest()[:20]}.json"


def kg_stamp(directory: Path, config: object) -> dict:
    """What a kg train checkpoint was learned from: each triple file's SHA-256 and the settings."""
    from nlndl.compiler.triples import SPLITS, split_path

    files = {}
    for name in (*SPLITS, "entities"):
        path = split_path(Path(directory), name)  # <name>.txt, or <name>.txt.gz
        if path.is_file():
            files[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    settings = {
        k: v for k, v in asdict(config).items() if k not in ("device", "jobs")
    }  # the result does not depend on them
    return {"files": files, "config": settings}


def kg_kept(out: OutputDir, stamp: dict, chosen: list[str], graph: object) -> dict:
    """The relations an interrupted ``kg train`` kept in OUT/rules.checkpoint, checked to be learned from the same
    files and settings (JobError naming what changed)."""
    from nlndl.kg import from_checkpoint

    root = out.root / KG_CHECKPOINT
    if not root.is_dir():
        raise JobError(f"{root}: error: no checkpoint to resume from")
    kept = {}
    for relation in chosen:
        path = out.root / kg_checkpoint_file(relation)
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text())
            changed = changed_files(data["stamp"]["files"], stamp["files"])
            changed += [f"--{k.replace('_', '-')} was {v!r}, is {stamp['config'].get(k)!r}"
                        for k, v in data["stamp"]["config"].items() if stamp["config"].get(k) != v]  # fmt: skip
            if changed:
                raise JobError(
                    f"{path}: error: cannot resume: relation {relation!r} was learned from other inputs "
                    f"({'; '.join(changed[:5])}); it was left as it was: run without --resume to start over"
                )
            kept[relation] = from_checkpoint(data["relation"], graph)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise JobError(f"{path}: error: checkpoint is unusable ({type(exc).__name__}: {exc}); "
                           "it was left as it was") from None  # fmt: skip
    return kept


def train_kg(
    directory: Path,
    output: Path,
    relations: list[str] | None = None,
    config: object | None = None,
    progress: Callable[[int, int, str, object | None], None] | None = None,
    resume: bool = False,
) -> KGTraining:
    """Learn every relation (or those named) of a graph (either layout) and write OUTPUT/rules.dl,
    rules.lp, their facts and rules.json; the exported program is run by clingo and by nlndl's crisp evaluator,
    which must agree. ``config``: a :class:`nlndl.kg.KGConfig`.

    Each relation learned is kept in OUTPUT/rules.checkpoint until the program is written, so that a run
    interrupted (Ctrl-C, SIGTERM: Interrupted) continues with ``resume`` from the relations it had learned."""
    from nlndl.distributed import process_rank
    from nlndl.kg import Graph, KGConfig, checked_relations, checkpoint_json, learn_graph

    config = config or KGConfig()
    graph = Graph.read(Path(directory), config.memory_limit)
    chosen = checked_relations(graph, relations, Path(directory))
    at = process_rank(config.device)
    alone = at.size == 1
    if resume and not alone:
        raise JobError(f"{output}: error: --resume is not supported with several processes (torchrun)")
    saved = [kg_checkpoint_file(r) for r in chosen] if alone else []
    out = OutputDir(Path(output), "kg train")
    out.adopted.update(saved if resume else ())
    out.check([*kg_output_files(graph, chosen), *saved], [KG_CHECKPOINT] if alone else [])
    notes = [note] if (note := out.mixed_note()) else []
    stamp = kg_stamp(Path(directory), config)
    kept = kg_kept(out, stamp, chosen, graph) if resume else {}

    def keep(one: object) -> None:
        name = kg_checkpoint_file(one.relation)
        record = {"stamp": stamp, "relation": checkpoint_json(one)}

        def write(staging: Path) -> None:
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(json.dumps(record) + "\n")

        out.publish(write, expected=[name])
        out.adopted.add(name)

    try:
        learned = learn_graph(Path(directory), graph, chosen, config, progress, kept, keep if alone else None)
    except KeyboardInterrupt as exc:
        count = sum((out.root / kg_checkpoint_file(r)).is_file() for r in chosen)
        where = f"kept in {out.root / KG_CHECKPOINT}; continue with --resume" if count else "nothing to keep"
        raise Interrupted.of(exc, f"interrupted: {count} of {len(chosen)} relations learned, {where}") from None
    if learned is None:  # not rank 0 of a torchrun: rank 0 writes, the others wait until it has
        at.barrier()
        return KGTraining([], 0, True, [])
    try:
        return _write_kg(directory, graph, learned, config, out, kept, notes)
    finally:
        if not alone:
            at.barrier()


def _write_kg(
    directory: Path, graph: object, learned: list, config: object, out: OutputDir, kept: dict, notes: list[str]
) -> KGTraining:
    """Rank 0's half of :func:`train_kg`: the learned relations written as one program, its closure checked."""
    from nlndl import kg_export

    origin = Path(directory).name
    texts = {
        "rules.dl": kg_export.souffle_text(learned, origin),
        "rules.lp": kg_export.clingo_text(learned, origin),
        "rules.tsv": kg_export.anyburl_text(learned, graph, KG_COUNTED_RULES, config.seed, config.path_length),
        "facts.lp": kg_export.clingo_facts(graph, learned),
        **kg_export.fact_files(graph, learned),
    }
    derived, agree = closure_agrees(graph, learned, texts["rules.lp"] + texts["facts.lp"])
    report = {
        "data": from_record(Path(directory), out.root),
        "config": asdict(config),
        "renamed": kg_export.renamed(learned),
        "resumed": sorted(kept),
        "relations": [one.to_json() for one in learned],
        "closure": {"derived": derived, "clingo_agrees_with_crisp": agree},
    }
    texts["rules.json"] = json.dumps(report, indent=2) + "\n"

    def write(staging: Path) -> None:
        for name, text in texts.items():
            (staging / name).write_text(text)

    try:
        save(out, write, list(texts))
    except OutputError as exc:
        raise JobError("\n".join(["rules learned (not saved):", *texts["rules.dl"].splitlines(), str(exc)])) from None
    out.remove_tree(KG_CHECKPOINT)
    return KGTraining(learned, derived, agree, [out.root / name for name in texts], report, notes)


QUERY = re.compile(r"^\s*(?P<relation>.+?)\(\s*(?P<head>.*?)\s*,\s*(?P<tail>.*?)\s*\)\s*$")


def parse_query(text: str) -> tuple[str, str, bool]:
    """``relation(head, ?)`` or ``relation(?, tail)`` (names may be double-quoted): (relation, entity, whether
    the tail is asked); ValueError on anything else."""
    found = QUERY.match(text)
    if not found:
        raise ValueError(f"cannot read query {text!r}; write relation(head, ?) or relation(?, tail)")
    relation, head, tail = (found[g].strip() for g in ("relation", "head", "tail"))
    head, tail = (x[1:-1] if len(x) >= 2 and x[0] == x[-1] == '"' else x for x in (head, tail))
    if (head == "?") == (tail == "?"):
        raise ValueError(f"query {text!r} must ask for exactly one of head and tail with '?'")
    return relation, (tail if head == "?" else head), head != "?"


def predict_kg(output: Path, query: str, k: int = 10, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list:
    """The ``k`` best answers to ``query`` by the clauses ``nlndl kg train -D OUTPUT`` wrote, each with the clauses
    that derive it and their confidences (``nlndl.kg.Prediction``); JobError naming what is missing."""
    from nlndl.kg import Graph, predict

    relation, entity, tail_asked = parse_query(query)
    path = Path(output) / "rules.json"
    try:
        record = json.loads(path.read_text())
        relations = {one["relation"]: one for one in record["relations"]}
        data = recorded_path(path, record["data"])
    except FileNotFoundError:
        raise JobError(f"{path}: error: not found: nlndl kg train -D {output} writes it") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JobError(f"{path}:1:1: error: not a record written by nlndl kg train ({exc})") from None
    if relation not in relations:
        raise JobError(f"{path}: error: no rules for {relation!r} (learned: {', '.join(sorted(relations)[:10])})")
    if "sources" not in relations[relation]:
        raise JobError(f"{path}: error: written by an older nlndl kg train; train again to predict with it")
    graph = Graph.read(data, memory_limit)
    if entity not in graph.index:
        raise JobError(f"{data}: error: no entity {entity!r} in the graph")
    settings = record.get("config", {})  # the counted rules are found as training found them
    seed, length = int(settings.get("seed", 0)), int(settings.get("path_length", KG_PATH_LENGTH))
    return predict(graph, relations[relation], entity, tail_asked, k, seed, length)


def closure_agrees(graph: object, learned: list, clingo_program: str) -> tuple[int, bool]:
    """The triples the exported program derives that were not known (by clingo), and whether nlndl's crisp
    evaluator, run on the same rules and triples, derives exactly the same."""
    from nlndl.compiler.crisp import evaluate
    from nlndl.datalog import Names
    from nlndl.engines import clingo_model
    from nlndl.kg import KNOWN
    from nlndl.kg_export import rules, sources

    held = sources(learned)
    names = Names.for_relations(list(held))
    heads = {one.head for one in learned}
    db = {ident: set(graph.pairs(relation, KNOWN)) for ident, relation in held.items()}
    crisp = evaluate(db, rules(learned))
    ours = {(h, a, b) for h in heads for a, b in crisp.get(h, set())}
    theirs = set()
    for pred, args in clingo_model(clingo_program, {names(h): 2 for h in heads}):
        original = names.original(pred)
        if original in heads:
            theirs.add((original, graph.index[str(args[0])], graph.index[str(args[1])]))
    known = {(h, a, b) for h in heads for a, b in db[h]}
    return len(theirs - known), ours == theirs
