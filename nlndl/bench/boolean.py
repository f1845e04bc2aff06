"""NLN vs MLP on Boolean functions (paper section 3): random DNF targets and parity.

Each run draws its data online (fresh batches every step) from a numpy generator seeded by the
run's seed, so the NLN and the MLP of one seed see the same target and the same batches.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import torch
from rich.table import Table
from torch.nn import functional as F  # noqa: N812

from nlndl.runtime.adam import Adam
from nlndl.runtime.formula import Formula, Literal, default_names
from nlndl.runtime.init import Init
from nlndl.runtime.layers import Xor, xor_formula
from nlndl.runtime.mlp import MLP
from nlndl.runtime.networks import NormalForm

Progress = Callable[[str], None]


@dataclass
class BooleanConfig:
    """Settings of the Boolean experiments; defaults are the full run."""

    bits: int = 10
    ps: tuple[float, ...] = (0.75, 0.5)
    dnf_seeds: int = 5
    dnf_steps: int = 10000
    batch: int = 50
    test_samples: int = 1000
    eval_every: int = 100
    dnf_terms: int = 200
    mlp_hidden: int = 1000
    lr: float = 1e-3
    c: float = 20.0  # membership scale: Adam's lr 0.001 moves c*w by about c*lr per step
    xor_ns: tuple[int, ...] = (10, 30, 50, 100)
    xor_seeds: int = 3
    xor_steps: int = 6000
    xor_lr: float = 1e-2
    xor_init: str = "normal:std=0.1"  # zero-mean and near-symmetric; std 0.3+ stalls on subset parities
    xor_mlp_hidden: tuple[int, ...] = (256, 256)
    models: tuple[str, ...] = ("nln", "mlp")
    threads: int = field(default=0, metadata={"help": "torch threads; 0 keeps torch's default"})

    @classmethod
    def quick(cls) -> BooleanConfig:
        """A reduced run: under five minutes on two CPU cores."""
        return cls(dnf_seeds=3, dnf_steps=6000, xor_ns=(10, 50), xor_seeds=2, xor_steps=4000)


def random_dnf(rng: np.random.Generator, bits: int, p: float, draws: int = 5000) -> Formula:
    """A random DNF: 2-5 terms of 2-4 literals (negated w.p. 1/2), true on 10-90% of Bernoulli(p) inputs."""
    while True:
        clauses = []
        for _ in range(rng.integers(2, 6)):
            k = int(rng.integers(2, 5))
            idx = rng.choice(bits, k, replace=False)
            clauses.append(tuple(sorted(Literal(int(i), bool(rng.random() < 0.5)) for i in idx)))
        target = Formula("dnf", tuple(clauses), bits, default_names(bits))
        rate = target.evaluate(rng.random((draws, bits)) < p).mean()
        if 0.1 < rate < 0.9:
            return target


def _bits(rng: np.random.Generator, n: int, width: int, p: float) -> np.ndarray:
    return (rng.random((n, width)) < p).astype(np.float32)


def _step(model: torch.nn.Module, opt: Adam, x: np.ndarray, y: np.ndarray) -> float:
    out = model(torch.from_numpy(x)).reshape(-1)
    loss = F.binary_cross_entropy(out, torch.from_numpy(y.astype(np.float32)))
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


@torch.no_grad()
def _errors(model: torch.nn.Module, x: np.ndarray, y: np.ndarray) -> int:
    predicted = model(torch.from_numpy(x)).reshape(-1).numpy() > 0.5
    return int((predicted != y.astype(bool)).sum())


def dnf_run(cfg: BooleanConfig, p: float, model_name: str, seed: int) -> dict[str, Any]:
    """Train one model on one random DNF target; errors on a fixed test set over training."""
    rng = np.random.default_rng([seed, int(p * 1000)])
    target = random_dnf(rng, cfg.bits, p)
    x_test = _bits(rng, cfg.test_samples, cfg.bits, p)
    y_test = target.evaluate(x_test)
    torch.manual_seed(seed)
    if model_name == "nln":
        model: torch.nn.Module = NormalForm(
            cfg.bits,
            cfg.dnf_terms,
            negation=True,
            c=cfg.c,
            inner_init=Init("sparse", k=1, on=0.5, off=0.01),
            outer_init=Init("negative", k=1),
        )
    else:
        model = MLP(cfg.bits, [cfg.mlp_hidden])
    opt = Adam(model.parameters(), lr=cfg.lr)
    curve: list[list[int]] = []
    start = time.perf_counter()
    for step in range(1, cfg.dnf_steps + 1):
        x = _bits(rng, cfg.batch, cfg.bits, p)
        _step(model, opt, x, target.evaluate(x))
        if step % cfg.eval_every == 0 or step == cfg.dnf_steps:
            curve.append([step, _errors(model, x_test, y_test)])
    first_zero = next((s for s, e in curve if e == 0), None)
    record: dict[str, Any] = {
        "p": p,
        "model": model_name,
        "seed": seed,
        "target": str(target),
        "final_test_errors": curve[-1][1],
        "first_zero_step": first_zero,
        "stays_zero": first_zero is not None and all(e == 0 for s, e in curve if s >= first_zero),
        "seconds": round(time.perf_counter() - start, 2),
        "curve": curve,
    }
    if isinstance(model, NormalForm):
        learned = model.formula(threshold=0.5)
        every_input = ((np.arange(2**cfg.bits)[:, None] >> np.arange(cfg.bits)) & 1).astype(bool)
        record["formula"] = str(learned)
        record["formula_equivalent"] = bool((learned.evaluate(every_input) == target.evaluate(every_input)).all())
    return record


def xor_run(cfg: BooleanConfig, n: int, model_name: str, seed: int) -> dict[str, Any]:
    """Train one model on parity of n fair bits; bit error rate over training samples seen."""
    rng = np.random.default_rng([seed, n])
    x_test = _bits(rng, cfg.test_samples, n, 0.5)
    y_test = x_test.sum(1) % 2
    torch.manual_seed(seed)
    model: torch.nn.Module = (
        Xor(n, c=1.0, init=Init.parse(cfg.xor_init)) if model_name == "nln" else MLP(n, list(cfg.xor_mlp_hidden))
    )
    opt = Adam(model.parameters(), lr=cfg.xor_lr if model_name == "nln" else cfg.lr)
    curve: list[list[float]] = []
    start = time.perf_counter()
    for step in range(1, cfg.xor_steps + 1):
        x = _bits(rng, cfg.batch, n, 0.5)
        _step(model, opt, x, x.sum(1) % 2)
        if step % cfg.eval_every == 0 or step == cfg.xor_steps:
            curve.append([step * cfg.batch, _errors(model, x_test, y_test) / cfg.test_samples])
    record: dict[str, Any] = {
        "n": n,
        "model": model_name,
        "seed": seed,
        "final_bit_error": curve[-1][1],
        "seconds": round(time.perf_counter() - start, 2),
        "curve": curve,
    }
    if isinstance(model, Xor):
        learned = xor_formula(model)
        record["formula"] = str(learned)
        record["formula_is_parity"] = len(learned.clauses) == 1 and len(learned.clauses[0]) == n
    return record


def run(cfg: BooleanConfig, progress: Progress | None = None) -> dict[str, Any]:
    """All runs of both experiments; ``progress`` is called before each run with its label."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    tell = progress or (lambda _label: None)
    dnf, xor = [], []
    for p in cfg.ps:
        for seed in range(cfg.dnf_seeds):
            for model_name in cfg.models:
                tell(f"dnf p={p} {model_name} seed={seed}")
                dnf.append(dnf_run(cfg, p, model_name, seed))
    for n in cfg.xor_ns:
        for seed in range(cfg.xor_seeds):
            for model_name in cfg.models:
                tell(f"xor n={n} {model_name} seed={seed}")
                xor.append(xor_run(cfg, n, model_name, seed))
    return {"config": asdict(cfg), "dnf": dnf, "xor": xor, "summary": summarise(dnf, xor)}


def run_count(cfg: BooleanConfig) -> int:
    return len(cfg.models) * (len(cfg.ps) * cfg.dnf_seeds + len(cfg.xor_ns) * cfg.xor_seeds)


def summarise(dnf: list[dict[str, Any]], xor: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (experiment, setting, model): how many runs reached and kept 0 errors, and means."""
    rows = []
    for p, model_name in sorted({(r["p"], r["model"]) for r in dnf}, key=lambda k: (-k[0], k[1])):
        runs = [r for r in dnf if r["p"] == p and r["model"] == model_name]
        zero = [r["first_zero_step"] for r in runs if r["first_zero_step"] is not None]
        rows.append(
            {
                "experiment": "dnf",
                "setting": f"p={p}",
                "model": model_name,
                "runs": len(runs),
                "reached_zero": len(zero),
                "stayed_zero": sum(r["stays_zero"] for r in runs),
                "final_errors_mean": float(np.mean([r["final_test_errors"] for r in runs])),
                "median_first_zero_step": float(np.median(zero)) if zero else None,
            }
        )
    for n, model_name in sorted({(r["n"], r["model"]) for r in xor}):
        runs = [r for r in xor if r["n"] == n and r["model"] == model_name]
        rows.append(
            {
                "experiment": "xor",
                "setting": f"n={n}",
                "model": model_name,
                "runs": len(runs),
                "reached_zero": sum(r["final_bit_error"] == 0 for r in runs),
                "stayed_zero": None,
                "final_errors_mean": float(np.mean([r["final_bit_error"] for r in runs])),
                "median_first_zero_step": None,
            }
        )
    return rows


def with_overrides(cfg: BooleanConfig, **changes: Any) -> BooleanConfig:
    """A copy of ``cfg`` with the non-None ``changes`` applied."""
    return replace(cfg, **{k: v for k, v in changes.items() if v is not None})


def table(results: dict[str, Any]) -> Table:
    """The summary of :func:`run` as a table: one line per experiment, setting and model."""
    out = Table(title="NLN vs MLP on Boolean functions")
    for column in ("experiment", "setting", "model", "runs", "reached 0", "stayed 0", "final errors (mean)"):
        out.add_column(column)
    for row in results["summary"]:
        out.add_row(
            row["experiment"],
            row["setting"],
            row["model"],
            str(row["runs"]),
            str(row["reached_zero"]),
            "-" if row["stayed_zero"] is None else str(row["stayed_zero"]),
            f"{row['final_errors_mean']:.4g}",
        )
    return out
