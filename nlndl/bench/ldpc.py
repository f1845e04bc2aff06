"""LDPC-NLN vs LDPC-MLP vs BP vs ML on the erasure channel (paper section 4), trained with t = 3.

Both learned decoders are trained on the same (3,6)-regular code of length 48 with the same random
codewords, then run for up to 50 iterations; the length-48 decoders are also run unchanged on a
longer code of the same family.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import Any

import torch

from nlndl.compiler.tanner import regular_code
from nlndl.decoder_training import (
    DecoderTraining,
    Progress,
    bp_decoder,
    code_summary,
    compare,
    formulas,
    throughput,
    train_decoder,
)
from nlndl.defaults import LDPC_STEPS


@dataclass(frozen=True)
class LdpcBenchConfig:
    """Settings of ``nlndl bench ldpc``; defaults are the full run."""

    n: int = 48
    long_n: int = 480
    code_seed: int = 0
    eps: tuple[float, ...] = (0.2, 0.3, 0.35, 0.4, 0.45)
    ts: tuple[int, ...] = (1, 2, 3, 5, 10, 20, 50)
    codewords: int = 10000
    long_codewords: int = 1000
    steps: int = LDPC_STEPS
    seed: int = 0
    throughput_batch: int = 10000
    throughput_t: int = 20

    @classmethod
    def quick(cls) -> LdpcBenchConfig:
        """Under five minutes on two CPU cores: eps 0.3 and 0.4, fewer codewords and training steps."""
        return cls(eps=(0.3, 0.4), codewords=1500, long_codewords=150, steps=600)


def run(cfg: LdpcBenchConfig, device: str = "cpu", progress: Progress | None = None) -> dict[str, Any]:
    """Train NLN and MLP decoders, evaluate everything; the JSON report as a dict."""
    start = time.perf_counter()
    code = regular_code(cfg.n, 3, 6, cfg.code_seed)
    long_code = regular_code(cfg.long_n, 3, 6, cfg.code_seed)
    trained, training = {}, {}
    for kind in ("nln", "mlp"):
        train_cfg = replace(DecoderTraining(), kind=kind, steps=cfg.steps, seed=cfg.seed)
        decoder, history = train_decoder(code, train_cfg, progress)
        trained[kind] = decoder
        training[kind] = {"config": asdict(train_cfg), **history}
    results = compare(code, trained, cfg.eps, cfg.ts, cfg.codewords, cfg.seed, progress=progress)
    fuzzy = compare(
        code, {"nln": trained["nln"]}, cfg.eps, cfg.ts, cfg.codewords, cfg.seed, references=False, crisp=False
    )
    long_results = compare(long_code, trained, cfg.eps, cfg.ts, cfg.long_codewords, cfg.seed, progress=progress)
    speed = {
        name: throughput(code, decoder, cfg.throughput_batch, cfg.throughput_t, 0.4, device)
        for name, decoder in {"bp": bp_decoder(code), **trained}.items()
    }
    return {
        "code": code_summary(code),
        "codewords": cfg.codewords,
        "results": results,
        "nln_fuzzy": fuzzy,
        "generalisation": {
            "code": code_summary(long_code),
            "codewords": cfg.long_codewords,
            "results": long_results,
        },
        "training": training,
        "formulas": formulas(trained["nln"]),
        "throughput": {
            "device": device,
            "batch": cfg.throughput_batch,
            "iterations": cfg.throughput_t,
            "codewords_per_second": speed,
            "torch_threads": torch.get_num_threads(),
        },
        "config": asdict(cfg),
        "seconds": time.perf_counter() - start,
    }


def markdown(report: dict[str, Any]) -> str:
    """BER table: a row per (eps, decoder), a column per t, ML in its own column."""
    ts = report["config"]["ts"]
    lines = [
        "| eps | decoder | " + " | ".join(f"t={t}" for t in ts) + " | ML |",
        "|---|---|" + "---|" * (len(ts) + 1),
    ]
    rows = report["results"]
    shown = (  # table label, decoder, rows
        ("nln", "nln", rows),
        ("nln, fuzzy", "nln", report.get("nln_fuzzy", [])),
        ("mlp", "mlp", rows),
        ("bp", "bp", rows),
    )
    for eps in report["config"]["eps"]:
        ml = next(r["ber"] for r in rows if r["eps"] == eps and r["decoder"] == "ml")
        for label, name, source in shown:
            ber = {r["t"]: r["ber"] for r in source if r["eps"] == eps and r["decoder"] == name}
            if ber:
                lines.append(f"| {eps} | {label} | " + " | ".join(f"{ber[t]:.4f}" for t in ts) + f" | {ml:.4f} |")
    return "\n".join(lines) + "\n"
