"""Per-restart success rate of a setting: how often one draw, trained alone, finds a program.

``python examples/ilp/restart_rates.py SKETCH --restarts 256 --iters 1000 [--device cuda] [--set KEY=VALUE ...]``
trains K restarts of one seed side by side with no re-draws (no plateau replacement) and counts a restart
once its crisp program classifies every example right at a check (every 20 iterations). The learner's
success from a seed follows from this rate and the number of draws it makes, so settings are compared by
it rather than by a few seeds. ``--set`` takes ChainConfig or TrainConfig fields, e.g.
``inner_init=negative:k=4,mean=-1,std=2`` or ``lr=0.02``. Prints one JSON line; ``--json`` appends it to a file.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import fields
from pathlib import Path

import torch

from nlndl import api
from nlndl.allocator import keep_freed_memory
from nlndl.runtime.chain import ChainConfig, ForwardChainer
from nlndl.runtime.init import Init
from nlndl.runtime.train import TrainConfig, Trainer


def settings(pairs: list[str]) -> tuple[dict, dict]:
    """ChainConfig and TrainConfig overrides from KEY=VALUE strings, typed as the field's default."""
    chain, train = {}, {}
    chain_fields, train_fields = ({f.name for f in fields(c)} for c in (ChainConfig, TrainConfig))
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key.endswith("_init"):
            chain[key] = Init.parse(value)
        elif key in chain_fields:
            default = getattr(ChainConfig(), key)
            chain[key] = value if default is None else type(default)(value)
        elif key in train_fields:
            train[key] = type(getattr(TrainConfig(), key))(value)
        else:
            raise SystemExit(f"error: --set {pair}: no ChainConfig or TrainConfig field {key!r}")
    return chain, train


def rate(sketch: Path, restarts: int, iters: int, seed: int, device: str, pairs: list[str]) -> dict:
    """Train ``restarts`` draws of ``seed`` for ``iters`` iterations; the iteration at which each one that
    succeeded was first seen right on every example."""
    chain, train = settings(pairs)
    program = api.compile(sketch)
    torch.manual_seed(seed)
    model = ForwardChainer(program, ChainConfig(restarts=restarts, **chain)).to(device)
    trainer = Trainer(model, TrainConfig(seed=seed, max_iters=iters, patience=10**9, **train))
    found: dict[int, int] = {}

    def check(model: ForwardChainer, losses: torch.Tensor) -> None:
        wrong = model.crisp_wrong(0.5).cpu()
        for restart in torch.nonzero(wrong == 0).flatten().tolist():
            found.setdefault(restart, trainer.state.iteration)

    started = time.perf_counter()
    trainer.fit(check)
    return {
        "sketch": str(sketch),
        "set": pairs,
        "seed": seed,
        "restarts": restarts,
        "iterations": trainer.state.iteration,
        "seconds": round(time.perf_counter() - started, 1),
        "device": device,
        "successes": len(found),
        "success_iterations": sorted(found.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sketch", type=Path)
    parser.add_argument("--restarts", type=int, default=256)
    parser.add_argument("--iters", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--set", dest="pairs", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", type=Path, help="append the result line to this file")
    args = parser.parse_args()
    keep_freed_memory()  # this script owns its process: the CLI's allocator setting, the CLI's speed
    row = rate(args.sketch, args.restarts, args.iters, args.seed, args.device, args.pairs)
    line = json.dumps(row)
    print(line, flush=True)
    if args.json is not None:
        with args.json.open("a") as out:
            out.write(line + "\n")


if __name__ == "__main__":
    main()
