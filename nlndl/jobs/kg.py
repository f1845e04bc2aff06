"""The knowledge-graph verbs as library functions: ``nlndl kg sketch``, ``kg train`` (every relation's rules,
kept as each is learned, resumable), ``kg predict`` and ``kg eval``."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nlndl.compiler import DEFAULT_MEMORY_LIMIT
from nlndl.compiler.diagnostics import Diagnostics
from nlndl.compiler.parser import string_value
from nlndl.compiler.triples import KGSketch, kg_sketch
from nlndl.defaults import (
    KG_CHECKED_CLOSURE,
    KG_COUNTED_RULES,
    KG_JOBS,
    KG_NEGATIVES,
    KG_PATH_LENGTH,
    KG_VARS,
)
from nlndl.errors import Interrupted, JobError
from nlndl.jobs import changed_files, from_record, output_dir, recorded_path, save
from nlndl.output import OutputDir, OutputError

if TYPE_CHECKING:
    from nlndl.ranking import Metrics


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


KG_FILES = ["rules.dl", "rules.lp", "rules.tsv", "facts.lp", "rules.json"]


@dataclass
class KGTraining:
    """What ``nlndl kg train`` learned and wrote: each relation's rules, and how clingo's closure of the
    exported program compares with nlndl's crisp evaluator's."""

    learned: list  # list[nlndl.kg_rules.RelationRules]; empty on a torchrun rank other than 0, which writes nothing
    derived: int  # new triples (not known) the exported program derives, by nlndl (and by clingo where checked)
    agree: bool | None  # clingo and nlndl derive the same triples; None: past KG_CHECKED_CLOSURE, not run by clingo
    files: list[Path]
    report: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # warnings found before the work (an earlier output left mixed)


def kg_output_files(graph: object, chosen: list[str]) -> list[str]:
    """Every file ``nlndl kg train`` writes for the ``chosen`` relations of ``graph`` (a ``nlndl.kg_rules.Graph``)."""
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
    from nlndl.kg_rules import from_checkpoint

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
    which must agree. ``config``: a :class:`nlndl.kg_rules.KGConfig`.

    Each relation learned is kept in OUTPUT/rules.checkpoint until the program is written, so that a run
    interrupted (Ctrl-C, SIGTERM: Interrupted) continues with ``resume`` from the relations it had learned."""
    from nlndl.distributed import process_rank
    from nlndl.kg_rules import Graph, KGConfig, checked_relations, checkpoint_json, learn_graph

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


QUERY = re.compile(r"^\s*(?P<relation>[^(]+?)\s*\((?P<args>.*)\)\s*$", re.DOTALL)
ASKED_HEAD = re.compile(r"^\s*\?\s*,(?P<entity>.*)$", re.DOTALL)  # (?, tail): the rest is the entity, commas and all
ASKED_TAIL = re.compile(r"^(?P<entity>.*),\s*\?\s*$", re.DOTALL)


def parse_query(text: str) -> tuple[str, str, bool]:
    """``relation(head, ?)`` or ``relation(?, tail)``: (relation, entity, whether the tail is asked); ValueError
    on anything else. The entity is what stands beside the ``?``, commas included (``r(Kansas_City,_Missouri,
    ?)``); a double-quoted one is read as rules.dl writes it (``"q\\"3"`` for q"3)."""
    found = QUERY.match(text)
    if not found:
        raise ValueError(f"cannot read query {text!r}; write relation(head, ?) or relation(?, tail)")
    args = found["args"]
    head, tail = ASKED_HEAD.match(args), ASKED_TAIL.match(args)
    if bool(head) == bool(tail):
        raise ValueError(f"query {text!r} must ask for exactly one of head and tail with '?'")
    entity = (head or tail)["entity"].strip()
    if not entity:
        raise ValueError(f"query {text!r} names no entity beside the '?'")
    return found["relation"], unquoted(entity), bool(tail)


def unquoted(name: str) -> str:
    """``name``, or where it is double-quoted, the text of the quotes as a sketch's string is read (the
    escapes ``\\"`` and ``\\\\``, the only ones nlndl writes); ValueError on another escape."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    text, problem = string_value(name)
    if problem is not None:
        raise ValueError(f"query entity {name}: {problem}")
    return text


def trained(output: Path) -> tuple[dict[str, dict], Path, int, int]:
    """What ``nlndl kg train -D OUTPUT`` wrote: per relation its record (rules.json), the graph's directory, and
    the seed and path length the counted rules were found with; JobError naming what is missing."""
    path = Path(output) / "rules.json"
    try:
        record = json.loads(path.read_text())
        relations = {one["relation"]: one for one in record["relations"]}
        data = recorded_path(path, record["data"])
    except FileNotFoundError:
        raise JobError(f"{path}: error: not found: nlndl kg train -D {output} writes it") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JobError(f"{path}:1:1: error: not a record written by nlndl kg train ({exc})") from None
    if any("sources" not in one for one in relations.values()):
        raise JobError(f"{path}: error: written by an older nlndl kg train; train again to predict with it")
    settings = record.get("config", {})  # the counted rules are found as training found them
    return relations, data, int(settings.get("seed", 0)), int(settings.get("path_length", KG_PATH_LENGTH))


def predict_kg(output: Path, query: str, k: int = 10, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list:
    """The ``k`` best answers to ``query`` by the clauses ``nlndl kg train -D OUTPUT`` wrote, each with the clauses
    that derive it and their confidences (``nlndl.kg_rules.Prediction``); JobError naming what is missing."""
    from nlndl.kg_rules import Graph, predict

    relation, entity, tail_asked = parse_query(query)
    relations, data, seed, length = trained(output)
    if relation not in relations:
        path = Path(output) / "rules.json"
        raise JobError(f"{path}: error: no rules for {relation!r} (learned: {', '.join(sorted(relations)[:10])})")
    graph = Graph.read(data, memory_limit)
    if entity not in graph.index:
        raise JobError(f"--query: error: no entity {entity!r} in the graph {os.path.normpath(data)}")
    return predict(graph, relations[relation], entity, tail_asked, k, seed, length)


@dataclass
class KGRanking:
    """What :func:`rank_kg` did: the file written, the triples ranked, MRR and Hits@k over both directions
    (``nlndl.ranking.Metrics``), and how many of the triples are valid.txt's: ``kg train`` never draws those as
    negatives, so the learned clauses may have learned where they are."""

    path: Path
    triples: int
    metrics: Metrics
    valid: int = 0


def rank_kg(
    output: Path,
    queries: Path,
    to: Path,
    k: int = 10,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    progress: Callable[[str, int], None] | None = None,
    jobs: int = KG_JOBS,
) -> KGRanking:
    """Every triple of ``queries`` (a triples file, as test.txt) asked both ways by the rules ``nlndl kg train -D
    OUTPUT`` wrote, ranked as ``bench kg`` ranks (``nlndl.kg_rules.answer_all``): the ``k`` best heads and tails
    of each written to ``to`` in AnyBURL's ranking format (the triple; then ``Heads: `` and ``Tails: ``, each
    followed by entity and score pairs, tab-separated); the triples' own ranks give MRR and Hits@k. Relations
    are ranked side by side by ``jobs`` worker processes (0: one per core), with the same result as one.
    Every check happens before the first relation is ranked; ``to`` appears whole or not at all."""
    import numpy as np

    from nlndl.compiler.diagnostics import Span
    from nlndl.compiler.triples import read_triples
    from nlndl.defaults import TRAIN_MEMORY_BYTES
    from nlndl.kg_rules import Graph, RankSettings, answer_relation, read_graph
    from nlndl.output import check_writable, write_bytes_atomic
    from nlndl.ranking import metrics
    from nlndl.ranking_file import LABELS
    from nlndl.workers import each_relation, worker_count

    relations, data, seed, length = trained(output)
    queries, to = Path(queries), Path(to)
    try:
        check_writable(to)
    except OutputError as exc:
        raise JobError(str(exc)) from None
    theirs = {queries.resolve(): "the queries file"}  # the user's files and nlndl's own are never replaced
    for folder, what in ((data, "a file of the graph"), (Path(output), "a file kg train wrote")):
        theirs.update((p.resolve(), what) for p in folder.iterdir())
    if to.resolve() in theirs:
        raise JobError(f"{to}: error: would replace {theirs[to.resolve()]}; write the ranking elsewhere")
    diags = Diagnostics()
    triples = read_triples(queries, diags, memory_limit)
    if diags:
        raise JobError(diags.render())
    graph = Graph.read(data, memory_limit)
    lines = [line.removesuffix("\r") for line in diags.sources.get(str(queries), "").split("\n")]
    numbers = [number for number, line in enumerate(lines, start=1) if line.strip()]
    for number, (h, r, t) in zip(numbers, triples, strict=True):
        if r not in relations:
            where = Span(str(queries), number, len(h) + 2)
            diags.error(where, f"no rules for {r!r} in {Path(output) / 'rules.json'}")
        for name, column in ((h, 1), (t, len(h) + len(r) + 3)):
            if name not in graph.index:
                diags.error(Span(str(queries), number, column), f"no entity {name!r} in the graph {data}")
    if diags:
        raise JobError(diags.render())
    by_relation: dict[str, list[int]] = {}
    for at, (_, r, _) in enumerate(triples):
        by_relation.setdefault(r, []).append(at)
    asked = {
        r: [(graph.index[triples[a][0]], graph.index[triples[a][2]]) for a in ats] for r, ats in by_relation.items()
    }
    settings = RankSettings(memory_limit, k, seed, length)
    order = list(by_relation)
    told = progress or (lambda relation, count: None)
    workers = worker_count(jobs, len(order), TRAIN_MEMORY_BYTES)
    extra = {r: (relations[r], asked[r]) for r in order}

    def started(relation: str) -> None:
        told(relation, len(asked[relation]))

    done = each_relation(
        read_graph, answer_relation, data, graph, order, settings, workers, started, lambda _: None, extra,
        "ranking", nullcontext,
    )  # fmt: skip
    answered: list = [None] * len(triples)
    for relation, ats in by_relation.items():
        for at, one in zip(ats, done[relation], strict=True):
            answered[at] = one
    names = graph.entities

    def listed(found: list[tuple[int, float]]) -> str:
        return "\t".join(f"{names[e]}\t{score:.6g}" for e, score in found)

    heads, tails = LABELS
    text = "".join(
        f"{h}\t{r}\t{t}\n{heads}{listed(one.heads)}\n{tails}{listed(one.tails)}\n"
        for (h, r, t), one in zip(triples, answered, strict=True)
    )
    try:
        write_bytes_atomic(to, text.encode())
    except OutputError as exc:
        raise JobError(str(exc)) from None
    ranks = np.array([x for one in answered for x in (one.head_rank, one.tail_rank)])
    held = set(graph.triples["valid"])  # as kg eval counts the triples of a split a file ranks (score_ranking)
    return KGRanking(to, len(triples), metrics(ranks), sum(triple in held for triple in triples))


@dataclass
class RankingScore:
    """What :func:`score_ranking` found: the file's triples, MRR and Hits@k over both directions, in all and per
    relation, the head and the tail queries apart (``directions``), and how many of each held-out split's
    triples the file ranks (``covers``: split -> (in the file, in the split))."""

    path: Path
    triples: int
    metrics: Metrics
    directions: dict[str, Metrics]
    relations: dict[str, Metrics]
    covers: dict[str, tuple[int, int]]


def score_ranking(data: Path, ranking: Path, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> RankingScore:
    """A ranking file in AnyBURL's format (``kg predict --queries`` writes one, as do AnyBURL, SAFRAN and
    PyClause) scored by ``bench kg``'s protocol on the graph in ``data``: each triple's head and tail ranked in
    the file's order, the other answers known in any split left out, an answer not listed at the mean rank of
    the candidates the list leaves out (``nlndl.ranking_file``). JobError with the located errors where the file
    is malformed or names an entity or relation the graph lacks."""
    from nlndl.compiler.triples import read_splits
    from nlndl.ranking_file import Known, score_file

    diags = Diagnostics()
    splits = read_splits(Path(data), diags, memory_limit)
    if diags:
        raise JobError(diags.render())
    scored = score_file(Path(ranking), Known.of(splits), diags)
    if scored is None:
        raise JobError(diags.render())
    asked = set(scored.triples)
    held = {name: set(splits[name]) for name in ("valid", "test") if splits[name]}
    covers = {name: (len(asked & triples), len(triples)) for name, triples in held.items()}
    return RankingScore(
        Path(ranking), len(scored.triples), scored.metrics(), scored.per_direction(), scored.per_relation(), covers
    )


def closure_agrees(
    graph: object, learned: list, clingo_program: str, limit: int | None = None
) -> tuple[int, bool | None]:
    """The triples the exported program derives that were not known, and whether clingo, run on the written
    program, derives exactly what nlndl does (``kg_rules.closure``: chain rules as sparse products, the rest by
    the crisp evaluator); None, clingo not run, where nlndl's closure holds more than ``limit`` new triples
    (``KG_CHECKED_CLOSURE``)."""
    from nlndl.datalog import Names
    from nlndl.engines import clingo_model
    from nlndl.kg_export import rules, sources
    from nlndl.kg_rules import KNOWN, closure

    held = sources(learned)
    names = Names.for_relations(list(held))
    heads = {one.head for one in learned}
    db = {ident: set(graph.pairs(relation, KNOWN)) for ident, relation in held.items()}
    crisp = closure(db, rules(learned), len(graph.entities))
    ours = {(h, a, b) for h in heads for a, b in crisp.get(h, set())}
    known = {(h, a, b) for h in heads for a, b in db[h]}
    derived = len(ours - known)
    if derived > (KG_CHECKED_CLOSURE if limit is None else limit):
        return derived, None
    theirs = set()
    originals = names.originals()
    for pred, args in clingo_model(clingo_program, {names(h): 2 for h in heads}):
        original = originals.get(pred, pred)
        if original in heads:
            theirs.add((original, graph.index[str(args[0])], graph.index[str(args[1])]))
    return len(theirs - known), ours == theirs
