"""GPU check of the LDPC decoders: CUDA gives the CPU's decisions, and codewords per second on both.

Run on a machine with a GPU: ``python examples/ldpc/device_check.py OUT.json``. The decoders have the
default shapes (NLN and MLP untrained: throughput does not depend on the weights); the code is the
seed-0 (3,6) code of length 48, and of length 480 for the GPU rows.
"""

from __future__ import annotations

import json
import statistics
import sys

import numpy as np
import torch

from nlndl import decoder_training as ldpc
from nlndl.compiler.tanner import null_space, regular_code
from nlndl.erasure import Decoded, erase, random_codewords
from nlndl.runtime.decoder import DecoderShape, ErasureDecoder, channel_messages, hard_decisions


def agreement(code, decoders: dict[str, ErasureDecoder], words: np.ndarray, erased: np.ndarray) -> dict:
    """Largest |CPU - CUDA| difference of the estimates, and the BER on each, at t = 3 and 20."""
    report = {}
    for name, decoder in decoders.items():
        estimates = {}
        for device in ("cpu", "cuda"):
            moved = decoder.to(device)
            index = ldpc.index_of(code, moved.shape).to(device)
            with torch.no_grad():
                out = moved(index, channel_messages(words, erased).to(device), 20, record=[3, 20])
            estimates[device] = {t: e.float().cpu() for t, e in out.items()}
        report[name] = {
            t: {
                "max_abs_diff": float((estimates["cpu"][t] - estimates["cuda"][t]).abs().max()),
                "ber_cpu": Decoded(*hard_decisions(estimates["cpu"][t])).rates(words)[0],
                "ber_cuda": Decoded(*hard_decisions(estimates["cuda"][t])).rates(words)[0],
            }
            for t in (3, 20)
        }
    return report


def main(path: str) -> None:
    torch.manual_seed(0)
    code = regular_code(48)
    decoders = {
        "bp": ldpc.bp_decoder(code),
        "nln": ErasureDecoder(DecoderShape("nln")),
        "mlp": ErasureDecoder(DecoderShape("mlp")),
    }
    rng = np.random.default_rng(1)
    words = random_codewords(null_space(code.h), 2000, rng)
    report = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "cpu_threads": torch.get_num_threads()}
    report["agreement_eps_0.35"] = agreement(code, decoders, words, erase(2000, 48, 0.35, rng))
    rows = []
    for n in (48, 480):
        graph = code if n == 48 else regular_code(480)
        for device in ("cpu", "cuda") if n == 48 else ("cuda",):
            for batch in (10000,) if device == "cpu" else (10000, 100000):
                for name, decoder in decoders.items():
                    row = {"n": n, "device": device, "batch": batch, "decoder": name, "t": 20}
                    try:
                        runs = [ldpc.throughput(graph, decoder, batch, 20, 0.4, device) for _ in range(3)]
                        row["codewords_per_second"] = statistics.median(runs)
                    except MemoryError as exc:
                        row["refused"] = str(exc)
                    rows.append(row)
                    print(row, flush=True)
    report["throughput"] = rows
    with open(path, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ldpc_gpu.json")
