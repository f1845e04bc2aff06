"""LDPC decoding over the erasure channel: train a message-passing decoder, evaluate it against BP and ML.

The data path: parity-check matrix -> Tanner graph (compiler) -> padded gather indices -> recurrent
decoder (runtime) trained on random codewords of the code's null space -> BER / WER per iteration count.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from nlndl.compiler.diagnostics import size_text
from nlndl.compiler.tanner import TannerGraph, null_space
from nlndl.defaults import LDPC_BATCH, LDPC_ITERATIONS, LDPC_STEPS
from nlndl.erasure import Decoded, erase, ml_decode, random_codewords
from nlndl.runtime.adam import Adam
from nlndl.runtime.budget import BudgetError
from nlndl.runtime.decoder import (
    DecoderShape,
    ErasureDecoder,
    TannerIndex,
    bit_probability,
    channel_messages,
    hard_decisions,
)

LEARNING_RATES = {"nln": 0.03, "mlp": 0.01}  # the NLN's memberships move by about lr per step
FORMAT = "nlndl-ldpc-decoder/2"  # 2: known flags, disjunction variable function
Progress = Callable[[str], None]


@dataclass(frozen=True)
class DecoderTraining:
    """How a learned decoder is trained: t = 3 iterations, random codewords, erasure rate per word uniform."""

    kind: str = "nln"
    steps: int = LDPC_STEPS
    batch: int = LDPC_BATCH
    lr: float | None = None  # Adam's learning rate; None: LEARNING_RATES[kind]
    iterations: int = LDPC_ITERATIONS
    eps_low: float = 0.05
    eps_high: float = 0.45
    every_iteration: bool = True  # loss on the estimates after each iteration, not only the last
    message_loss: float = 1.0  # weight of the loss on every edge message read as an estimate of the edge's bit
    terms: int = 0
    hidden: int = 200
    c: float = 1.0
    seed: int = 0
    validate_every: int = 100
    validation_words: int = 2000
    validation_eps: float = 0.35


def degrees(graph: TannerGraph) -> tuple[int, int]:
    """Largest variable and check degree of the code."""
    return max(graph.meta["var_degrees"]), max(graph.meta["check_degrees"])


def bp_decoder(graph: TannerGraph) -> ErasureDecoder:
    """Belief propagation (peeling) for the code: the message-passing decoder with the exact rules."""
    dv, dc = degrees(graph)
    return ErasureDecoder(DecoderShape(kind="bp", dv=dv, dc=dc))


def code_summary(graph: TannerGraph) -> dict[str, Any]:
    """What a report says of a code: length, checks, rank, 4-cycles, generator seed."""
    return {k: graph.meta.get(k) for k in ("n", "m", "rank", "four_cycles", "seed")}


def index_of(graph: TannerGraph, shape: DecoderShape) -> TannerIndex:
    return TannerIndex.from_arrays(graph.arrays, int(graph.meta["n"]), shape.dv, shape.dc)


def parameters(decoder: torch.nn.Module) -> int:
    return sum(p.numel() for p in decoder.parameters())


def _loss(decoder: ErasureDecoder, index: TannerIndex, words: np.ndarray, erased: np.ndarray, cfg: DecoderTraining):
    """Cross-entropy of the bit estimates (each iteration's or the last) plus, weighted, of every edge message.

    On the BEC a message on an edge is an estimate of that edge's bit, so each one has a target; without
    it the checks' parity is learned only through B, which learns to ignore checks that are still wrong.
    """
    record = range(1, cfg.iterations + 1) if cfg.every_iteration else [cfg.iterations]
    messages: list[torch.Tensor] = []
    estimates = decoder(index, channel_messages(words, erased), cfg.iterations, record=record, messages=messages)
    truth = torch.as_tensor(words, dtype=torch.float32)
    loss = torch.stack([_bce(e, truth) for e in estimates.values()]).mean()
    if cfg.message_loss:
        on_edges = truth[:, index.edge_var]
        loss = loss + cfg.message_loss * torch.stack([_bce(m, on_edges) for m in messages]).mean()
    return loss


def _bce(estimate: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of (B, 2, k) flags read as P(bit = 1) against the true bits (B, k)."""
    return torch.nn.functional.binary_cross_entropy(bit_probability(estimate).clamp(1e-6, 1 - 1e-6), truth)


def train_decoder(
    graph: TannerGraph, cfg: DecoderTraining, progress: Progress | None = None, memory_limit: int | None = None
) -> tuple[ErasureDecoder, dict[str, Any]]:
    """Train an NLN or MLP decoder on ``graph``; keep the weights with the best validation BER at t = iterations.

    An NLN decoder is validated crisp (:meth:`ErasureDecoder.crisp`), as it is evaluated. BudgetError, before
    any work, when a step (every iteration's intermediates, kept for the backward pass) is estimated to need
    more than ``memory_limit`` bytes.
    """
    if cfg.kind not in ("nln", "mlp"):
        raise ValueError(f"only nln and mlp decoders are trained, not {cfg.kind!r}")
    dv, dc = degrees(graph)
    torch.manual_seed(cfg.seed)
    shape = DecoderShape(kind=cfg.kind, dv=dv, dc=dc, terms=cfg.terms, hidden=cfg.hidden, c=cfg.c)
    decoder = ErasureDecoder(shape)
    index = index_of(graph, shape)
    if memory_limit is not None:
        # a training step keeps every iteration for the backward pass; validation runs one at a time
        need = max(
            decoder.working_bytes(cfg.batch, index) * cfg.iterations,
            decoder.working_bytes(cfg.validation_words, index),
        )
        if need > memory_limit:
            raise BudgetError(
                f"a training step on {cfg.batch:,} words with {cfg.iterations} iterations needs about "
                f"{size_text(need)}, over the limit of {size_text(memory_limit)}; use a smaller --batch or "
                "fewer --iterations, or raise --memory-limit"
            )
    basis = null_space(graph.h)
    rng = np.random.default_rng(cfg.seed)
    n = int(graph.meta["n"])
    val_words = random_codewords(basis, cfg.validation_words, rng)
    val_erased = erase(cfg.validation_words, n, cfg.validation_eps, rng)
    optimiser = Adam(decoder.parameters(), lr=cfg.lr or LEARNING_RATES[cfg.kind])
    best = (float("inf"), {k: v.clone() for k, v in decoder.state_dict().items()}, 0)
    curve: list[list[float]] = []
    start = time.perf_counter()
    for step in range(1, cfg.steps + 1):
        words = random_codewords(basis, cfg.batch, rng)
        erased = erase(cfg.batch, n, rng.uniform(cfg.eps_low, cfg.eps_high, size=cfg.batch), rng)
        loss = _loss(decoder, index, words, erased, cfg)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % cfg.validate_every == 0 or step == cfg.steps:
            ber = evaluate_decoder(decoder.crisp(), index, val_words, val_erased, [cfg.iterations])[cfg.iterations][0]
            curve.append([step, loss.item(), ber])
            if ber < best[0]:
                best = (ber, {k: v.clone() for k, v in decoder.state_dict().items()}, step)
            if progress:
                progress(f"{cfg.kind} step {step}/{cfg.steps}: loss {loss.item():.4f}, validation BER {ber:.4f}")
    decoder.load_state_dict(best[1])
    history = {
        "seconds": time.perf_counter() - start,
        "best_step": best[2],
        "validation_ber": best[0],
        "validation_eps": cfg.validation_eps,
        "parameters": parameters(decoder),
        "curve": curve,
    }
    return decoder, history


@torch.no_grad()
def evaluate_decoder(
    decoder: ErasureDecoder, index: TannerIndex, words: np.ndarray, erased: np.ndarray, ts: Iterable[int]
) -> dict[int, tuple[float, float]]:
    """{t: (BER, WER)} of a message-passing decoder after t iterations (one run to the largest t)."""
    ts = sorted(set(ts))
    estimates = decoder(index, channel_messages(words, erased), ts[-1], record=ts)
    return {t: Decoded(*hard_decisions(e)).rates(words) for t, e in estimates.items()}


def formulas(decoder: ErasureDecoder) -> dict[str, dict[str, str]]:
    """The learned NLN functions as text formulas (memberships above 1/2 kept)."""
    names = decoder.input_names()
    return {
        part: {key: str(f) for key, f in getattr(decoder, part).formulas(names[part]).items()}
        for part in ("check", "variable")
    }


def save_decoder(out: Path, decoder: ErasureDecoder, cfg: DecoderTraining, history: dict[str, Any]) -> None:
    """Weights as safetensors, settings and training history as JSON (no pickles)."""
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in decoder.state_dict().items()}, str(out / "decoder.safetensors"))
    meta = {"format": FORMAT, "shape": asdict(decoder.shape), "train": asdict(cfg), "history": history}
    if decoder.shape.kind == "nln":
        meta["formulas"] = formulas(decoder)
    (out / "decoder.json").write_text(json.dumps(meta, indent=1) + "\n")


def load_decoder(path: Path) -> tuple[ErasureDecoder, dict[str, Any]]:
    """Read a decoder saved by :func:`save_decoder`; ValueError when ``path`` holds none."""
    meta_path = path / "decoder.json"
    if not meta_path.is_file():
        raise ValueError(f"{path}: no decoder.json (train one with `nlndl ldpc train`)")
    try:
        meta = json.loads(meta_path.read_text())
        found = str(meta.get("format"))
        if found != FORMAT:
            older = found.startswith(FORMAT.split("/")[0] + "/")
            raise ValueError(
                f"saved as {found}, this nlndl reads {FORMAT}: retrain it" if older else "not an nlndl LDPC decoder"
            )
        known = {f.name for f in fields(DecoderShape)}
        decoder = ErasureDecoder(DecoderShape(**{k: v for k, v in meta["shape"].items() if k in known}))
        decoder.load_state_dict(load_file(str(path / "decoder.safetensors")))
    except (ValueError, KeyError, TypeError, AttributeError, RuntimeError, OSError, SafetensorError) as exc:
        raise ValueError(f"{meta_path}: cannot load the decoder: {exc}") from None
    return decoder, meta


def compare(
    graph: TannerGraph,
    decoders: dict[str, ErasureDecoder],
    eps_list: Sequence[float],
    ts: Sequence[int],
    codewords: int,
    seed: int = 0,
    references: bool = True,
    chunk: int = 5000,
    progress: Progress | None = None,
    crisp: bool = True,
) -> list[dict[str, Any]]:
    """BER and WER of every decoder (with ``references``, also BP, and ML with t = None) on the same codewords.

    NLN decoders run crisp (:meth:`ErasureDecoder.crisp`, the printed formulas) unless ``crisp`` is False.
    """
    decoders = {name: decoder.crisp() if crisp else decoder for name, decoder in decoders.items()}
    if references:
        decoders = {"bp": bp_decoder(graph), **decoders}
    indexes = {name: index_of(graph, decoder.shape) for name, decoder in decoders.items()}
    basis = null_space(graph.h)
    n = int(graph.meta["n"])
    rows: list[dict[str, Any]] = []
    for eps in eps_list:
        rng = np.random.default_rng([seed, int(round(eps * 1e6))])
        words = random_codewords(basis, codewords, rng)
        erased = erase(codewords, n, eps, rng)
        for name, decoder in decoders.items():
            index = indexes[name]
            totals = {t: np.zeros(2) for t in ts}
            for s in range(0, codewords, chunk):
                part = slice(s, s + chunk)
                for t, (ber, wer) in evaluate_decoder(decoder, index, words[part], erased[part], ts).items():
                    totals[t] += np.array([ber, wer]) * len(words[part])
            rows += [
                {"decoder": name, "eps": eps, "t": t, "ber": tot[0] / codewords, "wer": tot[1] / codewords}
                for t, tot in totals.items()
            ]
        if references:
            ber, wer = ml_decode(graph.h, words, erased).rates(words)
            rows.append({"decoder": "ml", "eps": eps, "t": None, "ber": ber, "wer": wer})
        if progress:
            progress(f"evaluated eps {eps} on {codewords} codewords")
    return rows


@torch.no_grad()
def throughput(graph: TannerGraph, decoder: ErasureDecoder, batch: int, iterations: int, eps: float, device: str):
    """Decoded codewords per second for one batch of ``batch`` words and ``iterations`` iterations.

    MemoryError, before any work, when the batch's intermediates would not fit in free memory.
    """
    index = index_of(graph, decoder.shape)
    need, free = decoder.working_bytes(batch, index), free_memory(device)
    if need > free:
        raise MemoryError(
            f"a batch of {batch:,} words of length {graph.meta['n']} needs about {need / 2**30:.1f} GiB "
            f"for the {decoder.shape.kind} decoder's intermediates; {free / 2**30:.1f} GiB free on {device}: "
            "use a smaller batch"
        )
    basis = null_space(graph.h)
    rng = np.random.default_rng(0)
    words = random_codewords(basis, batch, rng)
    channel = channel_messages(words, erase(batch, int(graph.meta["n"]), eps, rng)).to(device)
    decoder = decoder.crisp().to(device)
    index = index.to(device)
    decoder(index, channel[: min(batch, 64)], 1)  # warm-up
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    decoder(index, channel, iterations)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return batch / (time.perf_counter() - start)


def free_memory(device: str) -> int:
    """Free bytes on ``device``: the CUDA allocator's free memory, or the host's available memory."""
    if device.startswith("cuda"):
        return torch.cuda.mem_get_info(torch.device(device))[0]
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # no such sysconf name here: do not refuse
        return 1 << 62
