"""Sharded training benchmark: one sketch trained by one process and by N under torchrun, side by side.

Each run is a fresh ``nlndl train --max-iters K --json`` (under ``python -m torch.distributed.run --standalone
--nproc-per-node N`` for N processes, each with cores / N threads), its peak resident memory that of its
largest process (``os.wait4``). The rows say what sharding saves per process (memory, the substitutions each
holds) and costs (communication each iteration), and whether the runs learned the same: the same rules and
iterations, and by how much their losses at each check differ.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from nlndl.bench.scale import NLNDL, run_nlndl


def launcher(processes: int) -> tuple[str, ...]:
    """How ``processes`` processes of ``nlndl`` are started: plainly for one, by torchrun otherwise."""
    if processes == 1:
        return NLNDL
    return (NLNDL[0], "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(processes), "-m", "nlndl")


def record(out: Path) -> dict[str, Any]:
    """The <name>.json that ``nlndl train`` wrote into ``out`` (empty if none)."""
    for path in sorted(out.glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "losses_at_checks" in data:
            return data
    return {}


def measure(
    sketch: Path, processes: int, max_iters: int, options: list[str], seed: int = 0, timeout: float | None = None
) -> dict[str, Any]:
    """One run of ``nlndl train sketch`` with ``processes`` processes: wall seconds, peak RSS, and its record."""
    cores = os.cpu_count() or 1
    env = {**os.environ, "OMP_NUM_THREADS": str(max(cores // processes, 1))}
    with tempfile.TemporaryDirectory() as tmp:
        args = ["train", str(sketch), "-D", tmp, "--max-iters", str(max_iters), "--seed", str(seed), "--json"]
        code, seconds, rss, output = run_nlndl([*args, *options], timeout, launcher(processes), env)
        found = record(Path(tmp))
    row: dict[str, Any] = {"processes": processes, "threads": env["OMP_NUM_THREADS"], "exit": code}
    row |= {"wall_seconds": round(seconds, 2), "peak_rss": rss}
    if not found:
        row["error"] = output.strip().splitlines()[-1][:300] if output.strip() else f"exit {code}"
        return row
    keys = ("restarts", "iterations", "rules", "solved", "accepted", "winning_restart", "losses_at_checks")
    row |= {k: found[k] for k in keys}
    row["train_seconds"] = found["seconds"]
    return row


def run(sketch: Path, processes: int, max_iters: int, options: list[str], seed: int = 0) -> dict[str, Any]:
    """One process, then ``processes``, on the same sketch and settings, compared."""
    rows = [measure(sketch, n, max_iters, options, seed) for n in (1, processes)]
    report: dict[str, Any] = {"sketch": str(sketch), "max_iters": max_iters, "options": options, "seed": seed}
    report["cores"] = os.cpu_count()
    report["rows"] = rows
    one, many = rows
    if "rules" in one and "rules" in many:
        report["same_rules"] = one["rules"] == many["rules"]
        report["same_iterations"] = one["iterations"] == many["iterations"]
        pairs = [(a, b) for a, b in zip(one["losses_at_checks"], many["losses_at_checks"], strict=False) if a and b]
        report["largest_loss_difference"] = max((abs(a - b) for a, b in pairs), default=None)
        report["same_restarts"] = one["restarts"] == many["restarts"]
        if one["train_seconds"] and many["train_seconds"]:
            report["speed_up"] = round(one["train_seconds"] / many["train_seconds"], 2)
    return report


def markdown(report: dict[str, Any]) -> str:
    """The side-by-side table and the comparison line."""
    lines = [
        "| processes | threads each | restarts | iterations | train s | s per iteration | wall s | largest process |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        if "error" in r:
            lines.append(f"| {r['processes']} | {r['threads']} | failed: {r['error']} | | | | {r['wall_seconds']} | |")
            continue
        per = r["train_seconds"] / max(r["iterations"], 1)
        lines.append(
            f"| {r['processes']} | {r['threads']} | {r['restarts']} | {r['iterations']} | {r['train_seconds']:.2f} "
            f"| {per:.4f} | {r['wall_seconds']:.1f} | {r['peak_rss'] / 2**20:,.0f} MiB |"
        )
    if "same_rules" in report:
        diff = report["largest_loss_difference"]
        lines.append(
            f"\nsame rules: {'yes' if report['same_rules'] else 'no'}; same iterations: "
            f"{'yes' if report['same_iterations'] else 'no'}; same restarts: "
            f"{'yes' if report['same_restarts'] else 'no'}; largest loss difference at a check: "
            + (f"{diff:.2e}" if diff is not None else "-")
            + (f"; training speed-up {report['speed_up']}" if "speed_up" in report else "")
        )
    return "\n".join(lines)
