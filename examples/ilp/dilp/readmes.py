"""Write each dILP task's README: data status, language bias, the known rule and the learned one.

Run from the repository root after a benchmark:
``python examples/ilp/dilp/readmes.py ../shared/spec/dilp_tasks.json results.json [the bench command
[more.json "its command"]]`` (results.json from ``nlndl bench ilp --json``; the learned rules are those of
seed 0; more.json: a second run of some tasks, e.g. without the time limit, reported after the first).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from generate import UNFOLDED, slug  # noqa: E402

COMMAND = ""  # the benchmark command that produced the results, when given as a third argument
MORE: tuple[dict[str, dict], str] = ({}, "")  # a second run's rows by task name, and its command


def readme(task: dict, row: dict | None, sketch: str) -> str:
    learn = [line for line in sketch.splitlines() if line.startswith(".learn")]
    header = [line[3:] for line in sketch.splitlines()[:3] if line.startswith("// ")]
    unfolded = task["name"] in UNFOLDED
    if unfolded:
        bias = (
            "**Language bias in `sketch.dl`** (NLN's, not dILP's: no auxiliary predicate, the target learned "
            "directly with the extra variables of the unfolded solution, as the authors' `exp_arithmetic_even.py` "
            "learns even; dILP's two-atom clauses needed the auxiliary):"
        )
        known = [
            "**Known solution** (Evans & Grefenstette's, with its auxiliary predicate unfolded; checked by "
            "`nlndl check`):",
            "",
            "```prolog",
            UNFOLDED[task["name"]][1],
            "```",
            "",
            "dILP's published solution:",
        ]
    else:
        bias = "**Language bias in `sketch.dl`** (variables per learned predicate, auxiliary predicates invented):"
        known = ["**Known solution** (as published by Evans & Grefenstette):"]
    lines = [
        f"# {task['name']}",
        "",
        f"dILP task {task['dilp_task']}. Target `target/{task['target']['arity']}`: {task['target']['meaning']}.",
        "",
        f"**Data:** {task['data_status']}.",
        *([""] + [f"> {h}" for h in header] if task["data_status_code"] == "unavailable" else []),
        "",
        bias,
        "",
        "```",
        *learn,
        "```",
        "",
        *known,
        "",
        "```prolog",
        task["solution"].strip(),
        "```",
        "",
    ]
    if row is None:
        lines += ["Not yet benchmarked.", ""]
        return "\n".join(lines)
    rules = "\n".join(row["rules"]) or "(no rules)"
    status = "verified by clingo" if row.get("first_seed_solved") else "NOT solved"
    lines += [
        f"**Learned (seed 0, {status}):**",
        "",
        "```prolog",
        rules,
        "```",
        "",
        f"Solved in {row['solved']} of {row['seeds']} seeds (median {row['median_seconds']:.2f} s, "
        f"max {row['max_seconds']:.2f} s, median {row['median_iterations']:g} iterations)"
        + (f", measured by `{COMMAND}`." if COMMAND else "."),
        "",
    ]
    more = MORE[0].get(task["name"])
    if more is not None:
        lines += [
            f"In a second run, `{MORE[1]}`: solved in {more['solved']} of {more['seeds']} seeds (median "
            f"{more['median_seconds']:.2f} s, max {more['max_seconds']:.2f} s, median {more['median_iterations']:g} "
            "iterations).",
            "",
        ]
        if more.get("first_seed_solved") and not row.get("first_seed_solved"):
            lines += ["Seed 0 there, verified by clingo:", "", "```prolog", "\n".join(more["rules"]), "```", ""]
    return "\n".join(lines)


def main(spec: Path, results: Path) -> None:
    rows = {r["name"]: r for r in json.loads(results.read_text())["tasks"]}
    for task in json.loads(spec.read_text()):
        folder = HERE / slug(task["name"])
        if not (folder / "sketch.dl").exists():
            continue
        text = readme(task, rows.get(task["name"]), (folder / "sketch.dl").read_text())
        (folder / "README.md").write_text(re.sub(r"\n{3,}", "\n\n", text))
        print(f"wrote {(folder / 'README.md').relative_to(HERE)}")


if __name__ == "__main__":
    COMMAND = sys.argv[3] if len(sys.argv) > 3 else ""
    if len(sys.argv) > 5:
        MORE = ({r["name"]: r for r in json.loads(Path(sys.argv[4]).read_text())["tasks"]}, sys.argv[5])
    main(Path(sys.argv[1]), Path(sys.argv[2]))
