"""Figures for the benchmarks (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLOURS = {"nln": "tab:blue", "mlp": "tab:red"}


def _mean_curve(runs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    curves = np.array([r["curve"] for r in runs], dtype=float)  # (runs, points, 2)
    return curves[0, :, 0], curves[:, :, 1].mean(0)


def plot_boolean(results: dict[str, Any], path: Path) -> None:
    """Left: DNF test errors vs step at the largest p; right: parity bit error vs samples (n = 50 if run)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    if results["dnf"]:
        p = max(r["p"] for r in results["dnf"])
        for model in sorted({r["model"] for r in results["dnf"]}):
            runs = [r for r in results["dnf"] if r["p"] == p and r["model"] == model]
            for r in runs:
                steps, errs = np.array(r["curve"], dtype=float).T
                left.plot(steps, errs, color=COLOURS.get(model), alpha=0.25, lw=0.8)
            x, mean = _mean_curve(runs)
            left.plot(x, mean, color=COLOURS.get(model), lw=2, label=f"{model.upper()} (mean of {len(runs)})")
        left.set_yscale("symlog", linthresh=1)
        left.set(
            title=f"Random DNF, 10 bits, Bernoulli(p={p})",
            xlabel="training step (batch 50)",
            ylabel="errors on 1000 test samples",
        )
        left.legend()
    if results["xor"]:
        ns = sorted({r["n"] for r in results["xor"]})
        n = 50 if 50 in ns else ns[-1]
        for model in sorted({r["model"] for r in results["xor"]}):
            runs = [r for r in results["xor"] if r["n"] == n and r["model"] == model]
            x, mean = _mean_curve(runs)
            right.plot(x, mean, color=COLOURS.get(model), lw=2, label=f"{model.upper()} (mean of {len(runs)})")
        right.set(
            title=f"Parity of n={n} bits",
            xlabel="training samples",
            ylabel="average bit error",
            ylim=(-0.02, 0.6),
        )
        right.legend()
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_ldpc(report: dict[str, Any], path: Path) -> None:
    """BER vs iterations, one panel per erasure probability; ML as a dashed floor."""
    eps_list = report["config"]["eps"]
    fig, axes = plt.subplots(1, len(eps_list), figsize=(3.6 * len(eps_list), 3.4), squeeze=False)
    colours = {"nln": "tab:blue", "mlp": "tab:red", "bp": "black"}
    for ax, eps in zip(axes[0], eps_list, strict=True):
        rows = [r for r in report["results"] if r["eps"] == eps]
        for name in ("bp", "nln", "mlp"):
            pts = sorted((r["t"], r["ber"]) for r in rows if r["decoder"] == name)
            if pts:
                t, ber = zip(*pts, strict=True)
                ax.plot(t, ber, marker="o", ms=3, color=colours[name], label=name.upper())
        ml = [r["ber"] for r in rows if r["decoder"] == "ml"]
        if ml:
            ax.axhline(ml[0], ls="--", color="grey", label="ML")
        ax.axvline(3, ls=":", color="grey", lw=0.8)
        ax.set(xscale="log", yscale="log", title=f"eps = {eps}", xlabel="iterations t")
    axes[0][0].set_ylabel(f"BER (n = {report['code']['n']}, {report['codewords']} codewords)")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_scale(report: dict[str, Any], path: Path) -> None:
    """Compile and train seconds against N, log-log (nlndl bench scale)."""
    fig, ax = plt.subplots(figsize=(5, 4))
    for key, label in (("compile_seconds", "compile"), ("train_seconds", "train")):
        points = [(r["n"], r[key]) for r in report["rows"] if key in r and (key != "train_seconds" or r.get("solved"))]
        if points:
            ax.plot(*zip(*points, strict=True), marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (people)")
    ax.set_ylabel("seconds")
    ax.legend()
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_noise(report: dict[str, Any], path: Path) -> None:
    """Fraction of runs right on the clean labels against the label noise, per task and overall."""
    fig, ax = plt.subplots(figsize=(6, 4))
    levels = sorted({r["noise"] for r in report["runs"]})
    for task in dict.fromkeys(r["task"] for r in report["runs"]):
        own = [r for r in report["runs"] if r["task"] == task]
        rates = [np.mean([r["correct"] for r in own if r["noise"] == x]) for x in levels]
        ax.plot(levels, rates, marker="o", alpha=0.5, lw=1, label=task)
    ax.plot(levels, [report["correct_fraction"][f"{x:g}"] for x in levels], color="black", lw=2.5, label="all")
    ax.set(xlabel="fraction of labels flipped", ylabel="runs right on the clean labels", ylim=(-0.02, 1.02))
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def _save(fig, path: Path) -> None:
    """The figure in the format its suffix names, replacing ``path`` atomically (whole or absent)."""
    import io

    from nlndl.output import write_bytes_atomic

    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=120, format=path.suffix.lstrip(".").lower() or "png")
    write_bytes_atomic(path, buffer.getvalue())
