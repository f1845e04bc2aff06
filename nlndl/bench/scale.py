"""Scaling benchmark: compile and train on a reachability task whose size is a parameter.

N people in a random forest (each person after the first has a parent drawn uniformly among those before,
seeded), ``parent/2`` read from a ``.facts`` file, ``ancestor`` learned from its transitive closure with
``.closed ancestor`` (every other pair a negative). Each compile and train runs in a fresh process, so that
its peak resident memory is its own (``os.wait4``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from nlndl.compiler import triples
from nlndl.compiler.diagnostics import Diagnostics


def forest(n: int, seed: int = 0, sample: int | None = None) -> tuple[str, str, int]:
    """The sketch, the parent facts (tab-separated) and the number of positive examples for ``n`` people;
    with ``sample``, the closed world sampled at that many negatives per positive."""
    rng = np.random.default_rng(seed)
    child = np.arange(1, n)
    parent = (rng.random(n - 1) * child).astype(np.int64)
    ancestors: dict[int, list[int]] = {0: []}
    for c, p in zip(child.tolist(), parent.tolist(), strict=True):
        ancestors[c] = [p, *ancestors[p]]
    facts = "".join(f"p{p}\tp{c}\n" for p, c in zip(parent.tolist(), child.tolist(), strict=True))
    positives = [f'.pos ancestor("p{a}", "p{c}").' for c in range(n) for a in sorted(ancestors[c])]
    sketch = "\n".join(
        [
            f"// reachability on a random forest of {n} people (nlndl bench scale, seed {seed})",
            ".decl parent(a: symbol, b: symbol)",
            ".input parent",
            ".decl ancestor(a: symbol, b: symbol)",
            ".learn ancestor(vars=3, body=[parent, ancestor])",
            ".closed ancestor" + (f"(sample={sample})" if sample else ""),
            *positives,
        ]
    )
    return sketch + "\n", facts, len(positives)


def read_triples(path: Path) -> list[tuple[str, str, str]]:
    """(head, relation, tail) of a tab-separated triple file in the Neural LP layout; ValueError with the
    located errors of a malformed one."""
    diags = Diagnostics()
    rows = triples.read_triples(path, diags)
    if diags:
        raise ValueError(diags.render())
    return rows


def kg_task(directory: Path, target: str, sample: int) -> tuple[str, dict[str, str], int]:
    """A sketch learning ``target`` from a knowledge graph in the Neural LP layout: every other relation of
    facts.txt as a ``.input`` relation, ``target``'s triples of facts.txt and train.txt as positives, and a
    closed world sampled at ``sample`` negatives per positive. Returns the sketch, the facts files' texts by
    relation, and the number of positives."""
    triples = read_triples(directory / "facts.txt")
    known = sorted({(h, t) for h, r, t in triples + read_triples(directory / "train.txt") if r == target})
    relations = sorted({r for _, r, _ in triples} - {target})
    facts = {r: "".join(f"{h}\t{t}\n" for h, q, t in triples if q == r) for r in relations}
    lines = [f"// {target} from {directory.name} (nlndl bench scale --kg)"]
    for r in relations:
        lines += [f".decl {r}(a: symbol, b: symbol)", f".input {r}"]
    lines += [f".decl {target}(a: symbol, b: symbol)", f".learn {target}(vars=3, body=[{', '.join(relations)}])"]
    lines += [f".closed {target}(sample={sample})", *(f'.pos {target}("{h}", "{t}").' for h, t in known)]
    return "\n".join(lines) + "\n", facts, len(known)


NLNDL = (sys.executable, "-m", "nlndl")


def run_nlndl(
    args: list[str], timeout: float | None, launcher: tuple[str, ...] = NLNDL, env: dict[str, str] | None = None
) -> tuple[int, float, int, str]:
    """Exit code, wall seconds, peak RSS in bytes and stdout of ``python -m nlndl ARGS`` in a fresh process (or
    of ``launcher ARGS``: the peak is then of the largest process it waited for, as torchrun waits for its own)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen([*launcher, *args], stdout=out, stderr=err, env=env)
        deadline = None if timeout is None else start + timeout
        while True:
            # without a timeout, waited for as it ends (polling would add up to a poll's interval to its time)
            pid, status, usage = os.wait4(process.pid, 0 if deadline is None else os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                process.kill()
                _, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        return code, seconds, usage.ru_maxrss * 1024, out.read() + err.read()[-2000:]


def _first_line(output: str, code: int) -> str:
    return output.strip().splitlines()[0] if output.strip() else f"exit {code}"


def _compile_and_train(
    tmp: Path, row: dict[str, Any], options: list[str], seed: int, train: bool, time_limit: float, both: list[str]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """``nlndl compile --json`` of ``tmp/sketch.dl`` (with ``options``) and, with ``train``, ``nlndl train
    --json``, each in a fresh process and both with ``both``, their seconds and peaks (and a failure's first
    line) recorded in ``row``; the two JSON objects, None where a command failed or did not run."""
    sketch = str(tmp / "sketch.dl")
    code, seconds, rss, output = run_nlndl(["compile", sketch, "--json", "--seed", str(seed), *options, *both], None)
    row.update(compile_seconds=seconds, compile_rss=rss)
    if code != 0:
        row["compile_error"] = _first_line(output, code)
        return None, None
    summary = json.loads(output.strip().splitlines()[0])
    if not train:
        return summary, None
    args = [
        "train",
        sketch,
        "-D",
        str(tmp / "out"),
        "--json",
        "-q",
        "--time-limit",
        str(time_limit),
        "--seed",
        str(seed),
        *both,
    ]
    code, seconds, rss, output = run_nlndl(args, time_limit * 3 + 120)
    row.update(train_seconds=seconds, train_rss=rss)
    try:
        result = json.loads(output.strip().splitlines()[0])
        row.update(solved=result["solved"], iterations=result["iterations"], rules=result["rules"])
        return summary, result
    except (ValueError, IndexError, KeyError):
        row.update(solved=False, train_error=_first_line(output, code))
        return summary, None


def _subgraph_options(subgraph: int | str | None) -> list[str]:
    return ["--subgraph", "none" if subgraph is None else str(subgraph)]


def measure(
    n: int, seed: int, train: bool, time_limit: float, sample: int | None = None, subgraph: int | str | None = None
) -> dict[str, Any]:
    """One size: the compile's figures and, with ``train``, a training run (solved and clingo-verified, on the
    whole forest, or not); with ``subgraph``, both train on a subgraph of that many people."""
    sketch, facts, positives = forest(n, seed, sample)
    row: dict[str, Any] = {"n": n, "facts": n - 1, "positives": positives, "grid": n**3, "subgraph": subgraph}
    with tempfile.TemporaryDirectory(prefix="nlndl-scale-") as tmp:
        (Path(tmp) / "sketch.dl").write_text(sketch)
        (Path(tmp) / "parent.facts").write_text(facts)
        summary, _ = _compile_and_train(Path(tmp), row, [], seed, train, time_limit, _subgraph_options(subgraph))
    if summary is not None:
        row.update(
            atoms=summary["atoms"],
            substitutions=summary["substitutions"],
            index_bytes=summary["bytes"],
            bytes_per_substitution=summary["bytes"] / max(summary["substitutions"], 1),
        )
    return row


def measure_kg(
    directory: Path,
    target: str,
    sample: int,
    seed: int,
    train: bool,
    time_limit: float,
    subgraph: int | str | None = None,
) -> dict[str, Any]:
    """Compile (and with ``train`` train) :func:`kg_task`, each in a fresh process (on a subgraph of
    ``subgraph`` entities where given)."""
    sketch, facts, positives = kg_task(directory, target, sample)
    row: dict[str, Any] = {
        "kg": directory.name,
        "target": target,
        "positives": positives,
        "sample": sample,
        "subgraph": subgraph,
        "facts": sum(text.count("\n") for text in facts.values()),
    }
    with tempfile.TemporaryDirectory(prefix="nlndl-kg-") as tmp:
        (Path(tmp) / "sketch.dl").write_text(sketch)
        for name, text in facts.items():
            (Path(tmp) / f"{name}.facts").write_text(text)
        limit = ["--memory-limit", "4GiB"]
        summary, result = _compile_and_train(
            Path(tmp), row, limit, seed, train, time_limit, _subgraph_options(subgraph)
        )
    if summary is not None:
        row.update(atoms=summary["atoms"], substitutions=summary["substitutions"], index_bytes=summary["bytes"])
    if result is not None:
        row.update(precision=result["accuracy"]["precision"], recall=result["accuracy"]["recall"])
    return row


def slope(rows: list[dict[str, Any]], key: str) -> float | None:
    """The exponent of ``key`` against N between the two largest sizes that have it (log-log)."""
    points = [(r["n"], r[key]) for r in rows if r.get(key)]
    if len(points) < 2:
        return None
    (n0, t0), (n1, t1) = points[-2], points[-1]
    return math.log(t1 / t0) / math.log(n1 / n0)


def run(
    sizes: list[int],
    seed: int,
    train: bool,
    time_limit: float,
    progress: Callable[[str], None] | None = None,
    sample: int | None = None,
    subgraph: int | str | None = None,
) -> dict[str, Any]:
    rows = []
    for n in sizes:
        if progress:
            progress(f"N = {n:,}")
        rows.append(measure(n, seed, train, time_limit, sample, subgraph))
    return {
        "seed": seed,
        "sample": sample,
        "subgraph": subgraph,
        "time_limit": time_limit,
        "rows": rows,
        "compile_slope": slope([r for r in rows if "compile_error" not in r], "compile_seconds"),
        "train_slope": slope([r for r in rows if r.get("solved")], "train_seconds"),
    }


def markdown(report: dict[str, Any]) -> str:
    head = (
        "| N | facts | positives | grid (N^3) | kept substitutions | atoms | index bytes | compile s | compile peak "
        "| train | train s | train peak |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in report["rows"]:
        if "compile_error" in r:
            compiled = ["-", "-", "-", f"{r['compile_seconds']:.1f}", _mib(r["compile_rss"])]
            verdict = f"refused: {r['compile_error'][:120]}"
        else:
            compiled = [
                f"{r['substitutions']:,}",
                f"{r['atoms']:,}",
                f"{r['index_bytes']:,}",
                f"{r['compile_seconds']:.1f}",
                _mib(r["compile_rss"]),
            ]
            verdict = (
                "-"
                if "train_seconds" not in r
                else (
                    f"solved, {r['iterations']} its"
                    if r.get("solved")
                    else r.get("train_error", f"not solved in {r.get('iterations', '?')} its")[:120]
                )
            )
        trained = [
            verdict,
            f"{r['train_seconds']:.1f}" if "train_seconds" in r else "-",
            _mib(r["train_rss"]) if "train_rss" in r else "-",
        ]
        lines.append(
            "| "
            + " | ".join(
                [f"{r['n']:,}", f"{r['facts']:,}", f"{r['positives']:,}", f"{r['grid']:.1e}", *compiled, *trained]
            )
            + " |"
        )
    if report.get("subgraph") == "auto":
        lines.append(
            "\n--subgraph auto: a subgraph where the forest is large, grown from counterexamples, verified whole"
        )
    elif report.get("subgraph"):
        lines.append(f"\ntrained on a subgraph of {report['subgraph']:,} people, verified on the whole forest")
    if report["compile_slope"] is not None:
        lines.append(f"\ncompile time grows as N^{report['compile_slope']:.2f} between the two largest sizes")
    return "\n".join(lines)


def kg_markdown(row: dict[str, Any]) -> str:
    """One knowledge-graph row as a table."""
    lines = [
        "| data | target | facts | positives | negatives per positive | compile s | compile peak | atoms "
        "| kept substitutions | index bytes | train | train s | train peak |",
        "|---" * 13 + "|",
    ]
    if "compile_error" in row:
        compiled = ["-", "-", "-"]
    else:
        compiled = [f"{row['atoms']:,}", f"{row['substitutions']:,}", f"{row['index_bytes']:,}"]
    verdict = "-"
    if "train_seconds" in row:
        verdict = row.get("train_error", "")[:120] or (
            f"{'solved' if row['solved'] else 'not solved'}, {row['iterations']} its, "
            f"precision {row['precision']:.3f}, recall {row['recall']:.3f}"
        )
    cells = [
        row["kg"],
        row["target"],
        f"{row['facts']:,}",
        f"{row['positives']:,}",
        str(row["sample"]),
        f"{row['compile_seconds']:.1f}",
        _mib(row["compile_rss"]),
        *compiled,
        verdict,
        f"{row['train_seconds']:.1f}" if "train_seconds" in row else "-",
        _mib(row["train_rss"]) if "train_rss" in row else "-",
    ]
    text = "\n".join(lines + ["| " + " | ".join(cells) + " |"])
    if row.get("subgraph") == "auto":
        text += "\n\n--subgraph auto; precision and recall on the whole graph"
    elif row.get("subgraph"):
        text += f"\n\ntrained on a subgraph of {row['subgraph']:,} entities; precision and recall on the whole graph"
    if "compile_error" in row:
        text += f"\n\ncompile refused: {row['compile_error']}"
    if row.get("rules"):
        text += "\n\n" + "\n".join(row["rules"])
    return text


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"
