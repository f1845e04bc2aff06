"""Runtime benchmark: time per training step and gathered atom-slots per second on growing programs.

A training step is one forward pass over T forward-chaining steps for every restart plus the backward
pass and the Adam update. Programs are generated: lessThan over n numbers, connectedness on a random
graph of n nodes (about two edges per node, seeded).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.table import Table

from nlndl.compiler import compile_sketch
from nlndl.runtime.chain import ChainConfig, ForwardChainer
from nlndl.runtime.train import TrainConfig, Trainer


def less_than_sketch(n: int) -> str:
    succ = " ".join(f"succ({i},{i + 1})." for i in range(n - 1))
    pos = " ".join(f".pos lt({i},{j})." for i in range(n) for j in range(i + 1, n))
    return f""".type N <: number
.decl succ(a: N, b: N)
.decl lt(a: N, b: N)
{succ}
.learn lt(vars=3, terms=4)
.closed lt
{pos}
"""


def connectedness_sketch(n: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    edges = {(int(a), int(b)) for a, b in rng.integers(0, n, size=(2 * n, 2)) if a != b}
    reach = {a: {b for x, b in edges if x == a} for a in range(n)}
    changed = True
    while changed:  # transitive closure for the positive examples
        changed = False
        for a in range(n):
            new = set().union(*(reach[b] for b in reach[a])) - reach[a] if reach[a] else set()
            if new:
                reach[a] |= new
                changed = True
    facts = " ".join(f'edge("v{a}","v{b}").' for a, b in sorted(edges))
    pos = " ".join(f'.pos connected("v{a}","v{b}").' for a in range(n) for b in sorted(reach[a]))
    return f""".decl edge(a: symbol, b: symbol)
.decl connected(a: symbol, b: symbol)
{facts}
.learn connected(vars=3, terms=4)
.closed connected
{pos}
"""


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence C-level stderr (the profiler backend logs its start and stop there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@dataclass
class Case:
    name: str
    text: str


def cases(quick: bool) -> list[Case]:
    sizes_lt = (10, 30) if quick else (10, 30, 100)
    sizes_conn = (50,) if quick else (50, 200)
    return [Case(f"lessThan n={n}", less_than_sketch(n)) for n in sizes_lt] + [
        Case(f"connectedness n={n}", connectedness_sketch(n)) for n in sizes_conn
    ]


def measure(case: Case, device: str, restarts: int, steps: int, iters: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.dl"
        path.write_text(case.text)
        program = compile_sketch(path)
    program.steps = min(program.steps, steps)
    torch.manual_seed(0)
    model = ForwardChainer(program, ChainConfig(restarts=restarts)).to(device)
    trainer = Trainer(model, TrainConfig())
    trainer.step()  # warm-up
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        trainer.step()
    sync()
    seconds = (time.perf_counter() - start) / iters
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with _quiet_stderr(), torch.profiler.profile(activities=activities) as prof:
        wall = time.perf_counter()
        trainer.step()
        sync()
        wall = time.perf_counter() - wall
    kernel = sum(e.self_cpu_time_total for e in prof.key_averages()) / 1e6
    subs = sum(program.worlds[0].substitutions.values())
    inputs = sum(len(ir.inputs) for ir in program.learned.values())
    slots = subs * inputs * restarts * program.steps
    return {
        "case": case.name,
        "device": device,
        "restarts": restarts,
        "steps": program.steps,
        "substitutions": subs,
        "inputs": inputs,
        "seconds_per_step": seconds,
        "atom_slots_per_second": slots / seconds,
        "kernel_fraction": min(kernel / wall, 1.0),
    }


def _spin() -> None:
    while True:
        pass


@contextmanager
def competing_process(busy: bool) -> Iterator[None]:
    """With ``busy``, one CPU-bound process runs beside the measurement (as a CI runner or a laptop would)."""
    if not busy:
        yield
        return
    from nlndl.workers import spawn_context

    hog = spawn_context().Process(target=_spin, daemon=True)
    hog.start()
    time.sleep(0.5)  # let it reach its loop
    try:
        yield
    finally:
        hog.kill()
        hog.join()


CHILD = """
import json, sys
from nlndl.allocator import keep_freed_memory, share_cpu
keep_freed_memory()
policy = share_cpu()
from nlndl.bench import runtime
args = json.loads(sys.argv[1])
case = runtime.cases(args.pop("quick"))[args.pop("index")]
row = runtime.measure(case, **args)
print(json.dumps({**row, "wait_policy": policy or runtime.wait_policy()}))
"""


def wait_policy() -> str:
    return os.environ.get("OMP_WAIT_POLICY") or "default"


def measure_fresh(quick: bool, index: int, **args: Any) -> dict[str, Any]:
    """:func:`measure` in a new Python process, which chooses its OpenMP wait policy from the load it starts
    under, as the CLI does (the policy cannot change once torch is loaded)."""
    import json
    import subprocess

    payload = json.dumps({"quick": quick, "index": index, **args})
    done = subprocess.run([sys.executable, "-c", CHILD, payload], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(
    quick: bool = False,
    devices: tuple[str, ...] = ("cpu",),
    restarts: int = 8,
    steps: int = 10,
    iters: int = 5,
    progress=None,
    busy: bool = False,
) -> list[dict[str, Any]]:
    """Each case on each device; with ``busy``, each also beside a competing process,
    every measurement then in a fresh process that chooses its wait policy as the CLI does."""
    rows = []
    for index, case in enumerate(cases(quick)):
        for device in devices:
            for load in ("idle", "busy") if busy else ("idle",):
                if progress:
                    progress(f"{case.name} {device} {load}")
                args = {"device": device, "restarts": restarts, "steps": steps, "iters": iters}
                if busy:
                    with competing_process(load == "busy"):
                        row = measure_fresh(quick, index, **args)
                else:
                    row = {**measure(case, **args), "wait_policy": wait_policy()}
                rows.append({**row, "load": load, "threads": torch.get_num_threads()})
    return rows


def loss_difference(program) -> float:
    """Largest |CPU - CUDA| per-restart loss at initialisation, the same weights on both devices."""
    torch.manual_seed(0)
    model = ForwardChainer(program, ChainConfig())
    with torch.no_grad():
        cpu = model.losses()
        cuda = model.to("cuda").losses().cpu()
    return float((cpu - cuda).abs().max())


def table(rows: list[dict[str, Any]], restarts: int, steps: int) -> Table:
    """The rows of :func:`run` as a table: one line per case, load and device."""
    out = Table(
        title=f"Runtime: {restarts} restarts, T <= {steps}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads"
    )
    columns = ("case", "load", "wait policy", "device", "substitutions", "inputs", "T", "ms / step")
    for column in (*columns, "atom-slots / s", "in torch ops"):
        out.add_column(column)
    for r in rows:
        out.add_row(
            r["case"],
            r["load"],
            r["wait_policy"],
            r["device"],
            f"{r['substitutions']:,}",
            str(r["inputs"]),
            str(r["steps"]),
            f"{r['seconds_per_step'] * 1000:.1f}",
            f"{r['atom_slots_per_second']:.3g}",
            f"{r['kernel_fraction']:.0%}",
        )
    return out
