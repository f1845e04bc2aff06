"""GPU check of sparse layouts and subgraph training: CUDA computes the CPU's losses, and the forest trains.

Run on a machine with a GPU, from the repository root: ``python examples/scale/device_check.py OUT.json``.
First, for every bundled sketch compiled with ``layout="sparse"``, the largest |CPU - CUDA| difference of
the per-restart losses at initialisation (the same weights on both); then the reachability forest of
``nlndl bench scale`` at N = 1,000 and 10,000 trained on a 50-person subgraph, on CUDA and on the CPU of
the same machine, one after the other (clingo verifies every result on the whole forest).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import torch

from nlndl import api
from nlndl.bench.runtime import loss_difference
from nlndl.bench.scale import forest

ROOT = Path(__file__).resolve().parents[2]


def main(out: Path) -> None:
    report: dict = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "sparse_losses": {}}
    for sketch in sorted((ROOT / "examples" / "ilp").rglob("sketch.dl")):
        name = str(sketch.parent.relative_to(ROOT / "examples"))
        report["sparse_losses"][name] = loss_difference(api.compile(sketch, layout="sparse"))
    print("largest sparse-layout loss difference", max(report["sparse_losses"].values()), flush=True)
    report["forest"] = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1000, 10_000):
            sketch, facts, _ = forest(n, 0)
            (Path(tmp) / "sketch.dl").write_text(sketch)
            (Path(tmp) / "parent.facts").write_text(facts)
            program = api.compile(Path(tmp) / "sketch.dl", subgraph=50)
            for device in ("cuda", "cpu"):
                result = api.train(program, seed=0, time_limit=120, device=device)
                row = {"n": n, "device": device, "solved": result.solved, "seconds": round(result.seconds, 2)}
                row |= {"iterations": result.iterations, "rules": result.rule_texts()}
                row["positives"], row["entailed"] = result.score.positives, result.score.true_positives
                report["forest"].append(row)
                print(row, flush=True)
    out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
