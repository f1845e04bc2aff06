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
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from generate import UNFOLDED, slug  # noqa: E402


@dataclass
class Run:
    """One benchmark run's rows by task name, and the command that produced them ("" if not given)."""

    rows: dict[str, dict] = field(default_factory=dict)
    command: str = ""

    @classmethod
    def read(cls, results: Path, command: str = "") -> Run:
        return cls({r["name"]: r for r in json.loads(results.read_text())["tasks"]}, command)


def readme(task: dict, row: dict | None, sketch: str, command: str = "", more: Run | None = None) -> str:
    """The task's README from its spec entry, its row of the first run (``command``), and a second run."""
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
        + (f", measured by `{command}`." if command else "."),
        "",
    ]
    second = more.rows.get(task["name"]) if more is not None else None
    if second is not None:
        lines += [
            f"In a second run, `{more.command}`: solved in {second['solved']} of {second['seeds']} seeds "
            f"(median {second['median_seconds']:.2f} s, max {second['max_seconds']:.2f} s, "
            f"median {second['median_iterations']:g} iterations).",
            "",
        ]
        if second.get("first_seed_solved") and not row.get("first_seed_solved"):
            lines += ["Seed 0 there, verified by clingo:", "", "```prolog", "\n".join(second["rules"]), "```", ""]
    return "\n".join(lines)


def main(spec: Path, first: Run, more: Run | None = None) -> None:
    for task in json.loads(spec.read_text()):
        folder = HERE / slug(task["name"])
        if not (folder / "sketch.dl").exists():
            continue
        sketch = (folder / "sketch.dl").read_text()
        text = readme(task, first.rows.get(task["name"]), sketch, first.command, more)
        (folder / "README.md").write_text(re.sub(r"\n{3,}", "\n\n", text))
        print(f"wrote {(folder / 'README.md').relative_to(HERE)}")


if __name__ == "__main__":
    args = sys.argv[1:]
    first = Run.read(Path(args[1]), args[2] if len(args) > 2 else "")
    main(Path(args[0]), first, Run.read(Path(args[3]), args[4]) if len(args) > 4 else None)
