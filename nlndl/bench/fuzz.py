"""Fuzzing the command line's input handling: sketches drawn from the grammar and bundled sketches mutated,
each compiled (and, for some, a rules file checked against it) in a worker process with a memory cap, so that
a traceback, a hang or a runaway allocation is counted instead of taking the benchmark down.

The generators are shared with the test suite (tests/test_fuzz.py), which runs a few hundred inputs in-process.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing as mp
import random
import resource
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nlndl.workers import spawn_context

REPORT_EVERY = 100  # inputs per progress line
HANG_SECONDS = 5.0  # an input that takes longer counts as a hang
MEMORY_CAP = 4 * 1024**3  # the worker's address-space limit, beyond the interpreter's own use

NAMES = ["p", "q", "r", "edge", "succ", "lt", "zero", "a", "b", "Node", "_x", "target", "value"]
CONSTS = ["a", "b", "c", "0", "1", "7", "-3", '"s"', '"a b"', '"\\""', "2147483647", "-2147483648"]
VARS = ["X", "Y", "Z", "A", "B", "_", "_Y"]
TYPES = ["symbol", "number", "Num", "Node", "T"]
HOSTILE = [
    '"\\x"',
    '"\\u12"',
    '"\\n"',
    '"\t"',
    "_",
    "9" * 30,
    "-" + "9" * 25,
    "0" * 40 + "1",
    "99999999999999999999",
    "\u0663",
    "\uff11",
    "\x00",
    "\xff",
    "(",
    ")",
    ".",
    ",",
    ":-",
    "!",
    "[",
    "]",
    "{",
    "}",
    "=",
    "/*",
    "*/",
    "//",
    ".learn",
    ".pos",
    ".neg",
    ".closed",
    ".world",
    ".steps",
    ".function",
    ".include",
    ".input",
    ".decl",
    ".type",
    "vars=",
    "terms=",
    "body=[",
    "prune=none",
    "amalgamation=or",
    "negation",
    "form=cnf",
    "\n",
]


SYMBOLS = ["a", "b", "c", "d", '"e f"']


def _atom(rng: random.Random, name: str, arity: int, ground: bool, consts: list[str] = CONSTS) -> str:
    pool = consts if ground else consts + VARS[:5] * 3
    return f"{name}({', '.join(rng.choice(pool) for _ in range(arity))})"


def grammar_sketch(rng: random.Random) -> str:
    """A sketch assembled from the grammar's statements, with hostile values mixed in; half of them
    well-typed (symbols only, safe rules, examples present), so that grounding and lowering run too."""
    if rng.random() < 0.5:
        return _typed_sketch(rng)
    lines = []
    if rng.random() < 0.5:
        lines.append(".type Num <: number")
    if rng.random() < 0.4:
        lines.append(".type Node <: symbol")
    relations = {}
    for _ in range(rng.randint(1, 4)):
        name = rng.choice(NAMES)
        arity = rng.choice([0, 1, 2, 2, 2, 3])
        relations[name] = arity
        lines.append(f".decl {name}({', '.join(f'a{i}: {rng.choice(TYPES)}' for i in range(arity))})")
    names = list(relations)
    for _ in range(rng.randint(0, 12)):
        name = rng.choice(names)
        lines.append(_atom(rng, name, relations[name], ground=True) + ".")
    for _ in range(rng.randint(0, 3)):
        head = rng.choice(names)
        body = ", ".join(
            ("!" if rng.random() < 0.2 else "") + _atom(rng, n, relations[n], ground=False)
            for n in rng.sample(names, k=rng.randint(1, len(names)))
        )
        lines.append(f"{_atom(rng, head, relations[head], ground=False)} :- {body}.")
    learned = rng.choice(names)
    options = []
    for key, values in (
        ("vars", ["1", "2", "3", "4", "6", "33", "1000", "0", "-1", "99999999999999999999"]),
        ("terms", ["1", "2", "4", "5000", "0", "100000000"]),
        ("body", ["[" + ", ".join(rng.sample(names, k=rng.randint(0, len(names)))) + "]", "nope", "[ghost]"]),
        ("prune", ["auto", "extensional", "none", "maybe"]),
        ("form", ["dnf", "cnf", "xor"]),
        ("amalgamation", ["replace", "or", "max", "sum"]),
        ("exclude", ["[" + rng.choice(names) + "]"]),
        ("negation", ["true", "false", "1"]),
    ):
        if rng.random() < 0.35:
            options.append(f"{key}={rng.choice(values)}")
    lines.append(f".learn {learned}" + (f"({', '.join(options)})" if options or rng.random() < 0.3 else ""))
    for _ in range(rng.randint(0, 8)):
        kind = rng.choice([".pos", ".pos", ".neg"])
        lines.append(f"{kind} {_atom(rng, learned, relations[learned], ground=rng.random() < 0.9)}.")
    if rng.random() < 0.3:
        lines.append(f".closed {learned}")
    if rng.random() < 0.2:
        lines.append(f".steps {rng.choice(['1', '3', '0', '10001', '1000000000', '9' * 50])}")
    if rng.random() < 0.2:
        inner = [f".pos {_atom(rng, learned, relations[learned], ground=True)}."]
        lines.append(f".world w{rng.randint(0, 3)} {{ {' '.join(inner)} }}")
    if rng.random() < 0.3:
        spot = rng.randrange(len(lines))
        lines[spot] = _splice(rng, lines[spot], rng.choice(HOSTILE))
    return "\n".join(lines) + "\n"


def _typed_sketch(rng: random.Random) -> str:
    arities = {name: rng.choice([1, 2, 2, 3]) for name in rng.sample(["e", "f", "g", "h"], k=rng.randint(1, 3))}
    lines = [f".decl {n}({', '.join(f'a{i}: symbol' for i in range(k))})" for n, k in arities.items()]
    for _ in range(rng.randint(1, 15)):
        name = rng.choice(list(arities))
        lines.append(_atom(rng, name, arities[name], ground=True, consts=SYMBOLS) + ".")
    arity = rng.choice([1, 2])
    lines.append(f".decl t({', '.join(f'a{i}: symbol' for i in range(arity))})")
    options = [f"vars={arity + rng.randint(0, 2)}", f"terms={rng.randint(1, 4)}"]
    options += rng.sample(["prune=none", "prune=extensional", "form=cnf", "norepeat", "negation"], k=rng.randint(0, 2))
    lines.append(f".learn t({', '.join(options)})")
    examples = {_atom(rng, "t", arity, ground=True, consts=SYMBOLS) for _ in range(rng.randint(1, 6))}
    for i, atom in enumerate(sorted(examples)):
        lines.append(f"{'.pos' if i == 0 or rng.random() < 0.5 else '.neg'} {atom}.")
    if rng.random() < 0.3:
        lines.append(".closed t")
    if rng.random() < 0.2:
        spot = rng.randrange(len(lines))
        lines[spot] = _splice(rng, lines[spot], rng.choice(HOSTILE))
    return "\n".join(lines) + "\n"


def _splice(rng: random.Random, text: str, piece: str) -> str:
    at = rng.randint(0, len(text))
    return text[:at] + piece + text[at:]


def mutate(text: str, rng: random.Random) -> str:
    """A few random edits of ``text``: characters deleted, duplicated or swapped, hostile tokens inserted."""
    for _ in range(rng.randint(1, 4)):
        if not text:
            text = rng.choice(HOSTILE)
            continue
        at = rng.randrange(len(text))
        span = rng.randint(1, 12)
        kind = rng.randrange(5)
        if kind == 0:
            text = text[:at] + text[at + span :]
        elif kind == 1:
            text = text[:at] + text[at : at + span] * rng.randint(2, 4) + text[at:]
        elif kind == 2:
            other = rng.randrange(len(text))
            text = text[:at] + text[other : other + span] + text[at:]
        else:
            text = _splice(rng, text, rng.choice(HOSTILE))
    return text


def seed_sketches(examples: Path) -> list[str]:
    """The bundled sketches with inline facts (the mutation corpus), smallest first."""
    texts = [p.read_text() for p in sorted(examples.rglob("sketch.dl")) if ".input" not in p.read_text()]
    return sorted(texts, key=len)[:30]


# Knowledge graphs: names that clash once made identifiers, that engines reserve, that no file system takes
RELATION_NAMES = [
    "parent", "gp", "a-b", "a_b", "Gp", "Term0", "_x", "1abc", "/film/actor", "_film_actor", "not", "count",
    "sum", "min", "match", "range", "symbol", "number", "sketch", "facts", "rules", "aunt", "aunt_fact",
    "r" * 300, "has space", 'quo"te', "back\\slash", "\u00e9t\u00e9", "\u0663", "x.y", "é", "😀",
]  # fmt: skip
ENTITY_NAMES = ["a", "b", "c", "d", "e", "A", "_", "1", "-3", "x y", 'q"', "\\", "\u00e9", "n" * 200, "f", "g"]


def graph_files(rng: random.Random) -> tuple[dict[str, bytes], list[str]]:
    """A triple directory: facts.txt, train.txt and some of valid.txt, test.txt, entities.txt, with hostile
    names, encodings (a BOM, CRLF, Latin-1 bytes, NUL), missing fields and sizes from empty to a few dozen;
    and the relations drawn."""
    relations = rng.sample(RELATION_NAMES, k=rng.randint(1, 4))
    entities = rng.sample(ENTITY_NAMES, k=rng.randint(1, 8))

    def rows(count: int) -> list[str]:
        return [f"{rng.choice(entities)}\t{rng.choice(relations)}\t{rng.choice(entities)}" for _ in range(count)]

    files = {"facts.txt": rows(rng.randint(0, 30)), "train.txt": rows(rng.randint(1, 12))}
    for name in ("valid.txt", "test.txt"):
        if rng.random() < 0.5:
            files[name] = rows(rng.randint(0, 6))
    if rng.random() < 0.2:
        files["entities.txt"] = rng.sample(entities, k=rng.randint(0, len(entities)))
    out = {}
    for name, lines in files.items():
        if lines and rng.random() < 0.2:  # a malformed line
            spot = rng.randrange(len(lines))
            lines[spot] = rng.choice(["a\tb", "a\t\tb", "a\tb\tc\td", "", " ", "\t\t", lines[spot] + "\x00"])
        text = "".join(line + rng.choice(["\n", "\n", "\r\n"]) for line in lines)
        raw = text.encode("utf-8")
        if rng.random() < 0.15:
            raw = b"\xef\xbb\xbf" + raw  # a byte-order mark
        if rng.random() < 0.05:
            raw = text.encode("latin-1", errors="replace")
        out[name] = raw
    return out, relations


@dataclass
class Case:
    """One fuzz input: a sketch, optionally a rules file to check against it, and a facts file it may read; or a
    knowledge graph's triple files (``graph``) for ``kg sketch`` and, with ``kg_train``, ``kg train``."""

    sketch: str
    rules: str | None = None
    facts: bytes | None = None
    origin: str = "grammar"
    graph: dict[str, bytes] | None = None
    target: str = ""
    kg_train: bool = False
    options: list[str] = field(default_factory=list)


def cases(seed: int, corpus: list[str]) -> Iterator[Case]:
    """An endless, seeded stream of inputs: grammar-drawn and mutated sketches in turn, some with rules or facts."""
    rng = random.Random(seed)
    while True:
        if rng.random() < KG_SHARE:
            yield kg_case(rng)
            continue
        if rng.random() < 0.5 or not corpus:
            case = Case(grammar_sketch(rng))
        else:
            case = Case(mutate(rng.choice(corpus), rng), origin="mutation")
        if rng.random() < 0.25:
            case.rules = mutate("lt(A, B) :- succ(A, B).\nlt(A, B) :- succ(C, B), lt(A, C).\n", rng)
        if rng.random() < 0.15:
            case.sketch = ".decl edge(a: symbol, b: number)\n.input edge\n" + case.sketch
            raw = rng.choice([b"a\t1\n", b"a\t\n", b"a\t 3\n", b"a\t1_000\n", b"\xff\xfe\t1\n", b"a\t" + b"9" * 30])
            case.facts = raw * rng.randint(1, 3)
        yield case


KG_SHARE = 0.3  # of the inputs, knowledge graphs
KG_TRAIN_SHARE = 0.3  # of those, also run through kg train (a few iterations)


def kg_case(rng: random.Random) -> Case:
    """A knowledge-graph input: its triple files, the relation to learn and the options of ``kg sketch``."""
    graph, relations = graph_files(rng)
    target = rng.choice(relations) if rng.random() < 0.8 else rng.choice([*RELATION_NAMES, "ghost"])
    options = []
    if rng.random() < 0.3:
        options += ["--negatives", rng.choice(["0", "1", "3", "1000000000", "99999999999999999999"])]
    if rng.random() < 0.2:
        options += ["--seed", rng.choice(["0", "7", str(2**63 - 1), str(2**64), "-1"])]
    if rng.random() < 0.1:
        options += ["--memory-limit", rng.choice(["1KiB", "100", "2GiB", "inf", "0"])]
    return Case("", graph=graph, target=target, kg_train=rng.random() < KG_TRAIN_SHARE, options=options, origin="kg")


CHANGED = "files changed that nlndl must leave alone"
USER_FILES = {"notes.txt": b"mine\n", ".nlndl-staging-999999-notes/n.txt": b"mine too\n"}  # a user had these


def run_kg_case(case: Case, workdir: Path, invoke: Callable[[list[str]], tuple[int, BaseException | None]]) -> dict:
    """Write ``case``'s triple files under ``workdir`` and run ``kg sketch`` (and ``kg train``) into output
    directories that already hold a user's files; those, and the triple files, must be left as they were."""
    import shutil

    data, out, trained = workdir / "kg", workdir / "out", workdir / "trained"
    for path in (data, out, trained):
        shutil.rmtree(path, ignore_errors=True)
    data.mkdir(parents=True)
    for name, raw in (case.graph or {}).items():
        (data / name).write_bytes(raw)
    for root in (out, trained):
        for name, raw in USER_FILES.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(raw)
    before = {p: p.read_bytes() for p in data.iterdir()}
    runs = [["kg", "sketch", str(data), "--relation", case.target, "-D", str(out), *case.options]]
    if case.kg_train:
        # in this process (--jobs 1): the hang timer is per input, and workers would start torch again
        runs.append(["kg", "train", str(data), "-D", str(trained), "--max-iters", "3", "--time-limit", "1", "-q",
                     "--jobs", "1", *case.options])  # fmt: skip
    outcome = run_commands(runs, invoke)
    changed = [str(p) for p, raw in before.items() if not p.is_file() or p.read_bytes() != raw]
    for root in (out, trained):
        changed += [str(root / n) for n, raw in USER_FILES.items() if not (root / n).is_file() or
                    (root / n).read_bytes() != raw]  # fmt: skip
    if changed and outcome["error"] is None:
        outcome["error"] = f"{CHANGED}: {changed}"
    return outcome


def run_case(case: Case, workdir: Path, invoke: Callable[[list[str]], tuple[int, BaseException | None]]) -> dict:
    """Write ``case`` under ``workdir`` and run ``nlndl compile`` (and ``nlndl check`` with its rules) through
    ``invoke``, which returns an exit code and the exception that escaped, if any; a knowledge-graph case
    runs ``kg sketch`` / ``kg train`` instead (:func:`run_kg_case`)."""
    if case.graph is not None:
        return run_kg_case(case, workdir, invoke)
    sketch = workdir / "sketch.dl"
    sketch.write_text(case.sketch, errors="surrogateescape")
    if case.facts is not None:
        (workdir / "edge.facts").write_bytes(case.facts)
    runs = [["compile", str(sketch), "-F", str(workdir), "--json"]]
    if case.rules is not None:
        (workdir / "rules.dl").write_text(case.rules, errors="surrogateescape")
        runs.append(["check", str(workdir / "rules.dl"), str(sketch), "-F", str(workdir)])
    return run_commands(runs, invoke)


def run_commands(runs: list[list[str]], invoke: Callable[[list[str]], tuple[int, BaseException | None]]) -> dict:
    """Each command line in turn, until one lets an exception escape: the exit codes and that traceback."""
    outcome: dict[str, Any] = {"codes": [], "error": None}
    for args in runs:
        code, exc = invoke(args)
        outcome["codes"].append(code)
        if exc is not None:
            outcome["error"] = "".join(traceback.format_exception(exc))[-2000:]
            break
    return outcome


def _invoker(app_path: str) -> Callable[[list[str]], tuple[int, BaseException | None]]:
    """Run the typer app named ``module:attribute`` in this process, as a user's command line would, its output
    discarded: the app is made into its click command once (``typer.main.get_command``, 0.1 s for nlndl's),
    not once per input as typer's test runner does."""
    import importlib

    from typer.main import get_command

    module, name = app_path.split(":")
    command = get_command(getattr(importlib.import_module(module), name))
    return lambda args: _run(command, args)


def _run(command: Any, args: list[str]) -> tuple[int, BaseException | None]:
    """One command line: its exit code, and the exception that escaped the command, if any (none for an exit
    code of 0, 1 or 2, 2 being a usage error said as such)."""
    sink, stdin = io.StringIO(), sys.stdin
    sys.stdin = io.StringIO()  # nothing to read, as a command line run with no input
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            command.main(args=args, prog_name="nlndl")
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 0 if exit.code is None else 1
    except Exception as exc:
        return 1, exc
    finally:
        sys.stdin = stdin
    if code not in (0, 1, 2):
        return code, RuntimeError(f"exit code {code}: {sink.getvalue()[-500:]}")
    return code, None


def _worker(inbox: mp.Queue, outbox: mp.Queue, workdir: str, app_path: str) -> None:
    invoke = _invoker(app_path)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    base = _address_space()
    resource.setrlimit(resource.RLIMIT_AS, (base + MEMORY_CAP, hard))
    while (case := inbox.get()) is not None:
        start = time.perf_counter()
        try:
            outcome = run_case(case, Path(workdir), invoke)
        except MemoryError:
            outcome = {"codes": [], "error": "MemoryError: over the 4 GiB cap"}
        outcome["seconds"] = time.perf_counter() - start
        outbox.put(outcome)


def _address_space() -> int:
    try:
        with open("/proc/self/statm") as handle:
            return int(handle.read().split()[0]) * resource.getpagesize()
    except OSError:
        return 0


@dataclass
class FuzzReport:
    """Counts of a fuzz run: inputs, and those that ended in a traceback, a hang or the memory cap."""

    inputs: int = 0
    tracebacks: int = 0
    hangs: int = 0
    memory: int = 0
    changed: int = 0  # inputs after which a user's file or a triple file was not as it had been
    exit_codes: dict[str, int] = field(default_factory=dict)
    slowest: float = 0.0
    seconds: float = 0.0
    failures: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "tracebacks": self.tracebacks,
            f"hangs_over_{HANG_SECONDS:g}_s": self.hangs,
            "over_4_GiB": self.memory,
            "files_changed": self.changed,
            "exit_codes": self.exit_codes,
            "slowest_seconds": round(self.slowest, 3),
            "seconds": round(self.seconds, 1),
            "failures": self.failures[:20],
        }


def run(
    inputs: int, seed: int, examples: Path, tell: Callable[[str], None] | None = None, app: str = "nlndl.cli:app"
) -> FuzzReport:
    """Run ``inputs`` fuzz cases through the CLI ``app`` (``module:attribute``) in a worker process with a memory
    cap, restarting it after a hang or a crash."""
    import tempfile

    report = FuzzReport()
    started = time.perf_counter()
    stream = cases(seed, seed_sketches(examples))
    ctx = spawn_context()
    with tempfile.TemporaryDirectory(prefix="nlndl-fuzz-") as workdir:
        worker = None
        inbox: mp.Queue = ctx.Queue()
        outbox: mp.Queue = ctx.Queue()
        for index in range(inputs):
            case = next(stream)
            if worker is None or not worker.is_alive():
                inbox, outbox = ctx.Queue(), ctx.Queue()
                worker = ctx.Process(target=_worker, args=(inbox, outbox, workdir, app), daemon=True)
                worker.start()
            inbox.put(case)
            try:
                outcome = outbox.get(timeout=HANG_SECONDS * 12 if index == 0 else HANG_SECONDS * 4)
            except Exception:  # queue.Empty: a hang, or the worker died (killed for memory)
                alive = worker.is_alive()
                worker.kill()
                worker.join()
                worker = None
                outcome = {"codes": [], "error": "hang" if alive else "worker died", "seconds": HANG_SECONDS * 4}
            report.inputs += 1
            seconds = outcome.get("seconds", 0.0)
            report.slowest = max(report.slowest, seconds)
            for code in outcome["codes"]:
                report.exit_codes[str(code)] = report.exit_codes.get(str(code), 0) + 1
            error = outcome["error"]
            failed = error is not None or seconds > HANG_SECONDS
            if error is not None and ("MemoryError" in error or error == "worker died"):
                report.memory += 1
            elif error == "hang" or seconds > HANG_SECONDS:
                report.hangs += 1
            elif error is not None and error.startswith(CHANGED):
                report.changed += 1
            elif error is not None:
                report.tracebacks += 1
            if failed:
                report.failures.append(
                    {
                        "index": index,
                        "origin": case.origin,
                        "seconds": round(seconds, 2),
                        "error": error,
                        "sketch": case.sketch[:2000],
                        "rules": case.rules,
                    }
                )
            if tell is not None and ((index + 1) % REPORT_EVERY == 0 or index + 1 == inputs):
                tell(
                    f"{index + 1}/{inputs}: {report.tracebacks} tracebacks, {report.hangs} hangs, "
                    f"{report.memory} over the memory cap"
                )
        if worker is not None:
            inbox.put(None)
            worker.join(timeout=10)
            if worker.is_alive():
                worker.kill()
    report.seconds = time.perf_counter() - started
    return report
