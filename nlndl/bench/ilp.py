"""The ILP benchmark: every bundled task from several seeds, each result verified by clingo.

Tasks are the sketches under ``examples/ilp/dilp/`` (the dILP tasks, named as in dilp_tasks.json) and
the arithmetic examples under ``examples/ilp/``. One sketch and one setting per task, for all seeds.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nlndl import api
from nlndl.compiler.ir import CompiledProgram
from nlndl.export import souffle_text
from nlndl.jobs.ilp import prepare_training
from nlndl.learn import LearnResult, learn
from nlndl.verify import crisp_score

DILP_NAMES = {
    "predecessor": "Arithmetic/Predecessor",
    "even": "Arithmetic/Even",
    "even_odd": "Arithmetic/Even-Odd",
    "less_than": "Arithmetic/Less than",
    "fizz": "Arithmetic/Fizz",
    "buzz": "Arithmetic/Buzz",
    "member": "List/Member",
    "length": "List/Length",
    "son": "Family Tree/Son",
    "grandparent": "Family Tree/GrandParent",
    "husband": "Family Tree/Husband",
    "uncle": "Family Tree/Uncle",
    "relatedness": "Family Tree/Relatedness",
    "father": "Family Tree/Father",
    "undirected_edge": "Graph/Undirected Edge",
    "adjacent_to_red": "Graph/Adjacent to Red",
    "two_children": "Graph/Two Children",
    "graph_colouring": "Graph/Graph Colouring",
    "connectedness": "Graph/Connectedness",
    "cyclic": "Graph/Cyclic",
}
EXTRA = {"Addition": "addition", "Multiplication": "multiplication", "Sorting": "sorting"}
# the list tasks in the cons/3 encoding (examples/ilp/list_tasks.py): benched when named, not by default
NAMED_ONLY = {
    "Cons/Last": "list_last",
    "Cons/Member": "list_member",
    "Cons/Suffix": "list_suffix",
    "Cons/Length": "list_length",
}
# a task that learns on top of another's learned rules, from the same seed (the CLI's train -B)
CHAINS = {"Multiplication": "Addition"}


@dataclass
class Task:
    name: str
    sketch: Path
    after: Task | None = None  # the task whose learned rules (same seed) are this task's background
    default: bool = True  # in the benchmark when no task is named


def find_tasks(root: Path) -> list[Task]:
    tasks = [
        Task(DILP_NAMES[p.parent.name], p)
        for p in sorted((root / "dilp").glob("*/sketch.dl"))
        if p.parent.name in DILP_NAMES
    ]
    order = list(DILP_NAMES.values())
    tasks.sort(key=lambda t: order.index(t.name))
    for name, folder in EXTRA.items():
        if (root / folder / "sketch.dl").exists():
            first = next((t for t in tasks if t.name == CHAINS.get(name)), None)
            tasks.append(Task(name, root / folder / "sketch.dl", first))
    for name, folder in NAMED_ONLY.items():
        if (root / folder / "sketch.dl").exists():
            tasks.append(Task(name, root / folder / "sketch.dl", default=False))
    return tasks


def _keys(task: Task) -> set[str]:
    """The names ``--tasks`` finds a task by: its name, the last part of it, and its folder."""
    return {task.name.lower(), task.name.split("/")[-1].lower(), task.sketch.parent.name.lower()}


def select(tasks: list[Task], wanted: list[str] | None) -> list[Task]:
    if not wanted:
        return [t for t in tasks if t.default]
    keys = {w.lower() for w in wanted}
    return [t for t in tasks if _keys(t) & keys]


def unmatched(tasks: list[Task], wanted: list[str] | None) -> list[str]:
    """The names in ``wanted`` that no task answers to (see :func:`select`)."""
    known = set().union(*(_keys(t) for t in tasks))
    return [w for w in wanted or [] if w.lower() not in known]


def run(
    tasks: list[Task],
    seeds: int,
    max_iters: int,
    time_limit: float | None,
    progress: Callable[[str], None] | None = None,
    device: str = "cpu",
    jobs: int = 1,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Every task from seeds 0..seeds-1 on ``device``. A chained task first learns the task it builds on from
    the same seed (reusing that run when the benchmark has it) and counts as unsolved where that one failed;
    its time is its own training only. With ``jobs`` > 1, runs go to that many worker processes, each with
    its share of the CPU threads; a seed's result does not depend on it. ``checkpoint`` is given the report
    so far after every run (:func:`report`), so that an interrupted benchmark keeps what it finished."""
    started = time.process_time()
    found: dict[tuple[str, int], LearnResult] = {}
    workers_cpu = 0.0

    def so_far() -> dict[str, Any]:
        return report(tasks, seeds, found, time.process_time() - started + workers_cpu, device, jobs)

    if jobs > 1:
        for unit, seed, results, cpu in _run_parallel(tasks, seeds, max_iters, time_limit, device, jobs):
            workers_cpu += cpu
            for task, result in zip(unit, results, strict=True):
                found[(task.name, seed)] = result
                if progress:
                    progress(f"{task.name} seed {seed} {'solved' if result.solved else 'unsolved'}")
            if checkpoint:
                checkpoint(so_far())
    else:
        done: dict[tuple[str, int], tuple[CompiledProgram, LearnResult]] = {}
        for task in tasks:
            for seed in range(seeds):
                if progress:
                    progress(f"{task.name} seed {seed}")
                found[(task.name, seed)] = _train(task, seed, max_iters, time_limit, done, device)
                if checkpoint:
                    checkpoint(so_far())
    return so_far()


def report(
    tasks: list[Task],
    seeds: int,
    found: dict[tuple[str, int], LearnResult],
    cpu_seconds: float,
    device: str,
    jobs: int,
) -> dict[str, Any]:
    """The benchmark's JSON: a row per task whose every seed has run (``tasks``), every run so far (``runs``),
    and whether all have (``complete``)."""
    rows = []
    for task in tasks:
        if any((task.name, seed) not in found for seed in range(seeds)):
            continue
        results = [found[(task.name, seed)] for seed in range(seeds)]
        seconds = [r.seconds for r in results]
        rows.append(
            {
                "name": task.name,
                "sketch": str(task.sketch),
                "background_from": task.after.name if task.after else None,
                "seeds": seeds,
                "solved": sum(r.solved for r in results),
                "median_seconds": statistics.median(seconds),
                "max_seconds": max(seconds),
                "median_iterations": statistics.median(r.iterations for r in results),
                "restarts": results[0].restarts,  # restarts trained side by side
                "median_replaced": statistics.median(r.replaced for r in results),  # re-drawn on a plateau
                "median_renewed": statistics.median(r.renewed for r in results),  # some terms re-drawn on a plateau
                "rules": results[0].rule_texts(),
                "first_seed_solved": results[0].solved,
                "failures": [{"seed": i, "accuracy": r.score.to_json()} for i, r in enumerate(results) if not r.solved],
            }
        )
    runs = [
        {"task": task.name, "seed": seed, **found[(task.name, seed)].to_json()}
        for task in tasks
        for seed in range(seeds)
        if (task.name, seed) in found
    ]
    return {
        "tasks": rows,
        "runs": runs,
        "complete": len(rows) == len(tasks),
        "cpu_seconds": cpu_seconds,
        "device": device,
        "jobs": jobs,
    }


def units(tasks: list[Task]) -> list[list[Task]]:
    """The tasks in units of work that share nothing: a chained task with the task it builds on where both
    are benchmarked (one worker learns both from a seed, the second on the first's rules), others alone."""
    out: list[list[Task]] = []
    for task in tasks:
        home = next((u for u in out if task.after is not None and task.after in u), None)
        if home is not None:
            home.append(task)
        else:
            out.append([task])
    return out


def _run_parallel(
    tasks: list[Task], seeds: int, max_iters: int, time_limit: float | None, device: str, jobs: int
) -> Iterator[tuple[list[Task], int, list[LearnResult], float]]:
    """Every (unit, seed) in a pool of ``jobs`` processes: each unit's tasks, seed, results and the CPU seconds
    its worker spent, as they finish."""
    from nlndl.workers import spawn_context

    threads = max(1, len(os.sched_getaffinity(0)) // jobs) if hasattr(os, "sched_getaffinity") else 1
    context = spawn_context()  # no fork of a process that holds torch's thread pools, nor the caller's script
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker, initargs=(threads,)) as pool:
        pending = {
            pool.submit(_run_unit, unit, seed, max_iters, time_limit, device): (unit, seed)
            for seed in range(seeds)
            for unit in units(tasks)
        }
        for future in as_completed(pending):
            unit, seed = pending[future]
            results, cpu = future.result()
            yield unit, seed, results, cpu


def _start_worker(threads: int) -> None:
    import torch

    from nlndl.allocator import collect_less, keep_freed_memory

    keep_freed_memory()  # as the CLI does for its own process
    collect_less()
    torch.set_num_threads(threads)


def _run_unit(
    unit: list[Task], seed: int, max_iters: int, time_limit: float | None, device: str
) -> tuple[list[LearnResult], float]:
    """One unit's tasks from one seed, in a worker: their results and the CPU seconds they took."""
    started = time.process_time()
    done: dict[tuple[str, int], tuple[CompiledProgram, LearnResult]] = {}
    results = [_train(task, seed, max_iters, time_limit, done, device) for task in unit]
    return results, time.process_time() - started


def _train(
    task: Task,
    seed: int,
    max_iters: int,
    time_limit: float | None,
    done: dict[tuple[str, int], tuple[CompiledProgram, LearnResult]],
    device: str = "cpu",
) -> LearnResult:
    if (task.name, seed) in done:
        return done[(task.name, seed)][1]
    background: tuple[Path, ...] = ()
    with tempfile.TemporaryDirectory() as tmp:
        if task.after is not None:
            _train(task.after, seed, max_iters, time_limit, done, device)
            first_program, first = done[(task.after.name, seed)]
            if not first.solved:  # nothing to build on: no rules, every positive example missed
                program = api.compile(task.sketch, seed=seed)
                result = LearnResult(False, [], crisp_score(program, []), 0, 0.0, first.restarts, None)
                done[(task.name, seed)] = (program, result)
                return result
            path = Path(tmp) / "background.dl"
            path.write_text(souffle_text(first_program, first.rules, str(task.after.sketch)))
            background = (path,)
        # what ``nlndl train`` runs between reading its options and writing its files
        prepared = prepare_training(
            task.sketch, seed=seed, max_iters=max_iters, time_limit=time_limit, device=device, background=background
        )
        program = prepared.program
        result = learn(program, prepared.config, collective=prepared.collective)
    done[(task.name, seed)] = (program, result)
    return result


def markdown(result: dict[str, Any], published: dict[str, tuple[str, str]]) -> str:
    lines = [
        "| task | dILP | Metagol | nlndl solved | median s | max s | median iterations | rules (first seed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["tasks"]:
        dilp, metagol = published.get(row["name"], ("-", "-"))
        rules = " ".join(f"`{r}`" for r in row["rules"]) or "(none)"
        lines.append(
            f"| {row['name']} | {dilp} | {metagol} | {row['solved']}/{row['seeds']} | "
            f"{row['median_seconds']:.2f} | {row['max_seconds']:.2f} | {row['median_iterations']:g} | {rules} |"
        )
    return "\n".join(lines) + "\n"


def published_rates(spec: Path | None) -> dict[str, tuple[str, str]]:
    """dILP and Metagol success rates (as quoted in the NLN paper) from dilp_tasks.json or the bundled copy."""
    import json

    if spec is None or not spec.exists():
        return {}
    data = json.loads(spec.read_text())
    if isinstance(data, dict) and "rates" in data:  # the bundled examples/ilp/dilp/published_rates.json
        return {name: (r["dilp"], r["metagol"]) for name, r in data["rates"].items()}
    out = {}
    for task in data:
        rates = task.get("success_rates", {})
        out[task["name"]] = (
            str(rates.get("dilp_as_quoted_in_NLN_table", "-")),
            str(rates.get("metagol_as_quoted_in_NLN_table", "-")),
        )
    return out
