"""Write one sketch per dILP task from the task data (``shared/spec/dilp_tasks.json``).

Usage: python examples/ilp/dilp/generate.py PATH/TO/dilp_tasks.json

Each sketch keeps the task's background facts and its positive and negative examples (one ``.world``
per (B, P, N) triple when a task has several), learns ``target`` with the number of extra variables of
the task's published rule templates, and declares each auxiliary predicate of the published solution
as an invented predicate with its own template's extra variables. Tasks without data are skipped.

Where an auxiliary predicate exists only because dILP's clauses have two body atoms, the sketch uses
the NLN language bias instead (``UNFOLDED``): no invented predicate, the target learned directly with
the extra variables of the unfolded solution, as the authors' own Even experiment does
(``exp_arithmetic_even.py``: even with two extra variables, no auxiliary predicate). NLN bodies have
any number of atoms, which is the paper's argument against auxiliary predicates (section 4).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


# task -> (variables of target, the unfolded known solution); every solution checked by `nlndl check`
UNFOLDED: dict[str, tuple[int, str]] = {
    "Arithmetic/Even": (3, "target(X) :- zero(X).\ntarget(X) :- target(Y), succ(Y,Z), succ(Z,X)."),
    "Arithmetic/Fizz": (4, "target(X) :- zero(X).\ntarget(X) :- target(Y), succ(Y,Z), succ(Z,W), succ(W,X)."),
    "Arithmetic/Buzz": (3, "target(X) :- zero(X).\ntarget(X) :- target(Y), pred1(Y,Z), pred2(Z,X)."),
    "List/Length": (4, "target(X,X) :- zero(X).\ntarget(X,Y) :- cons(X,Z), target(Z,W), succ(W,Y)."),
}


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.split("/")[-1].lower()).strip("_")


def atom(pred: str, args: list[str]) -> str:
    return f"{pred}({', '.join(json.dumps(a) for a in args)})"


def extra_vars(template: list) -> int:
    return max((t[0] for t in template if t), default=0)


def sketch(task: dict) -> str:
    target = task["target"]
    unfolded = task["name"] in UNFOLDED
    lines = [
        f"// {task['name']} (dILP {task['dilp_task']}), generated from dilp_tasks.json by generate.py.",
        f"// Data status: {task['data_status']}.",
        *(
            ["// Language bias: NLN's, target learned directly, no auxiliary predicate (see generate.py)."]
            if unfolded
            else []
        ),
        "",
    ]
    relations = {p["name"]: p["arity"] for p in task["extensional_predicates"]}
    for triple in task["triples"]:
        for pred, rows in triple["background"].items():
            relations.setdefault(pred, len(rows[0]) if rows else 1)
    for name, arity in relations.items():
        lines.append(f".decl {name}({', '.join(f'a{i}: symbol' for i in range(arity))})")
    templates = task["program_template"]["rules"]
    aux = [] if unfolded else [p for p in task["aux_predicates"] if p["name"] not in relations]
    for p in aux:
        lines.append(f".decl {p['name']}({', '.join(f'a{i}: symbol' for i in range(p['arity']))})")
    lines.append(f".decl target({', '.join(f'a{i}: symbol' for i in range(target['arity']))})")
    lines.append("")
    for p in aux:
        v = extra_vars(templates.get(p["name"], [[1, True]]))
        lines.append(f".learn {p['name']}(vars={p['arity'] + v}, invented)")
    variables = UNFOLDED[task["name"]][0] if unfolded else target["arity"] + extra_vars(templates["target"])
    lines.append(f".learn target(vars={variables})")
    lines.append("")
    many = len(task["triples"]) > 1
    for i, triple in enumerate(task["triples"]):
        body = []
        for pred, rows in triple["background"].items():
            body += [atom(pred, r) + "." for r in rows]
        body += [".pos " + atom("target", r) + "." for r in triple["positive"]]
        body += [".neg " + atom("target", r) + "." for r in triple["negative"]]
        if many:
            lines.append(f".world w{i + 1} {{")
            lines += ["  " + b for b in body]
            lines.append("}")
        else:
            lines += body
    return "\n".join(lines) + "\n"


def main(path: Path) -> None:
    for task in json.loads(path.read_text()):
        if task["data_status_code"] == "unavailable":
            print(f"skipped {task['name']}: {task['data_status']}")
            continue
        out = HERE / slug(task["name"]) / "sketch.dl"
        out.parent.mkdir(exist_ok=True)
        out.write_text(sketch(task))
        print(f"wrote {out.relative_to(HERE)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
