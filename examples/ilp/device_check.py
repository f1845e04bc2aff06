"""GPU check of the ILP runtime: CUDA computes the CPU's losses, and the slow CPU tasks trained on a GPU.

Run on a machine with a GPU, from the repository root: ``python examples/ilp/device_check.py OUT.json``.
First, for every bundled sketch, the largest |CPU - CUDA| difference of the per-restart losses at
initialisation (the same weights on both); then for each slow task: that difference, milliseconds per
training iteration on each device, and ``nlndl train``'s default settings run on CUDA from a few seeds with
a time limit (clingo verifies every result, as on the CPU). ``--losses-only`` stops after the first part.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from nlndl import api
from nlndl.bench.runtime import loss_difference
from nlndl.runtime.chain import ChainConfig, ForwardChainer
from nlndl.runtime.train import TrainConfig, Trainer

ROOT = Path(__file__).resolve().parent
TASKS = {  # sketch -> (seeds, seconds per run): the tasks not solved from most seeds in 20 s on 2 CPU cores
    "dilp/length/sketch.dl": (5, 20.0),
    "sorting/sketch.dl": (5, 20.0),
    "addition/sketch.dl": (1, 90.0),
}


def ms_per_iteration(program, device: str, iters: int = 20) -> float:
    torch.manual_seed(0)
    trainer = Trainer(ForwardChainer(program, ChainConfig()).to(device), TrainConfig(seed=0))
    trainer.step()
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        trainer.step()
    if device == "cuda":
        torch.cuda.synchronize()
    return 1000 * (time.perf_counter() - start) / iters


def check(sketch: str, seeds: int, seconds: float) -> dict:
    program = api.compile(ROOT / sketch)
    runs = []
    for seed in range(seeds):
        result = api.train(program, seed=seed, max_iters=100_000, time_limit=seconds, device="cuda")
        runs.append(
            {
                "seed": seed,
                "solved": result.solved,
                "seconds": round(result.seconds, 2),
                "iterations": result.iterations,
                "rules": result.rule_texts(),
            }
        )
        print(sketch, runs[-1], flush=True)
    return {
        "sketch": f"examples/ilp/{sketch}",
        "restarts": ChainConfig().for_program(program).restarts,
        "max_loss_difference": loss_difference(program),
        "ms_per_iteration": {
            "cpu": round(ms_per_iteration(program, "cpu", 5), 1),
            "cuda": round(ms_per_iteration(program, "cuda"), 1),
        },
        "time_limit": seconds,
        "solved": sum(r["solved"] for r in runs),
        "runs": runs,
    }


def main(out: Path, train: bool = True) -> None:
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "losses": {}, "tasks": []}
    for sketch in sorted(ROOT.glob("**/sketch.dl")):
        if "multiplication" in sketch.parts:  # its background is a learned addition (nlndl train -B)
            continue
        name = str(sketch.parent.relative_to(ROOT))
        report["losses"][name] = loss_difference(api.compile(sketch))
        print(name, report["losses"][name], flush=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    for sketch, (seeds, seconds) in TASKS.items() if train else ():
        report["tasks"].append(check(sketch, seeds, seconds))
        out.write_text(json.dumps(report, indent=1) + "\n")  # after every task: a cut-off run keeps the rest


if __name__ == "__main__":
    main(Path(sys.argv[1]), train="--losses-only" not in sys.argv[2:])
