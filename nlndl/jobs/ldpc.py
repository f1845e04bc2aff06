"""The LDPC verbs as library functions: Tanner graphs from a matrix file or generated, a decoder trained and
evaluated over the erasure channel."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nlndl.compiler.tanner import MatrixError, TannerGraph, read_matrix, regular_code
from nlndl.defaults import (
    TRAIN_MEMORY_BYTES,
)
from nlndl.errors import JobError
from nlndl.jobs import output_dir, save

if TYPE_CHECKING:
    from nlndl.decoder_training import DecoderTraining


def tanner_graph(matrix: Path | None = None, generate: str | None = None, seed: int = 0) -> TannerGraph:
    """The code of ``matrix`` (a located JobError on a bad file), else of ``generate`` "N,DV,DC" (ValueError on
    a bad specification)."""
    if matrix is not None:
        try:
            return TannerGraph.from_matrix(read_matrix(Path(matrix)), source=str(matrix))
        except MatrixError as exc:
            raise JobError(str(exc)) from None
    n, dv, dc = (int(x) for x in (generate or "").split(","))
    return regular_code(n, dv, dc, seed)


def saved_tanner_graph(directory: Path) -> TannerGraph:
    """The Tanner graph ``nlndl ldpc compile -D DIR`` saved (a located JobError on anything else)."""
    try:
        return TannerGraph.load(Path(directory))
    except ValueError as exc:
        raise JobError(f"{directory}: error: {exc}") from None


DECODER_FILES = ["decoder.json", "decoder.safetensors"]


CODEWORD_BYTES = 16  # per bit of a test codeword: the word, its erasures, channel messages and decisions


EVAL_MEMORY = 2 * 1024**3


def train_ldpc_decoder(
    output: Path,
    graph: TannerGraph,
    training: DecoderTraining | None = None,
    progress: Callable[[str], None] | None = None,
    memory_limit: int = TRAIN_MEMORY_BYTES,
) -> dict:
    """Train a recurrent erasure decoder on ``graph`` and save it to ``output`` (weights as safetensors, settings
    as JSON); the summary, with the formulas an NLN decoder learned."""
    from nlndl import decoder_training as decoders
    from nlndl.runtime.budget import BudgetError

    target = output_dir(Path(output), DECODER_FILES, writer="ldpc train")
    training = training or decoders.DecoderTraining()
    try:
        trained, history = decoders.train_decoder(graph, training, progress, memory_limit)
    except BudgetError as exc:
        raise JobError(f"error: {exc}") from None
    save(target, lambda staging: decoders.save_decoder(staging, trained, training, history), DECODER_FILES)
    summary = {k: v for k, v in history.items() if k != "curve"}
    summary["output"] = str(output)
    if trained.shape.kind == "nln":
        summary["formulas"] = decoders.formulas(trained)
    return summary


def evaluate_ldpc_decoder(
    directory: Path, graph: TannerGraph, eps: Sequence[float], ts: Sequence[int], codewords: int, seed: int = 0
) -> list[dict]:
    """BER and WER of the decoder saved in ``directory``, BP and ML on the same random codewords of ``graph``."""
    from nlndl import decoder_training as decoders

    try:
        trained, _ = decoders.load_decoder(Path(directory))
    except ValueError as exc:
        raise JobError(f"error: {exc}") from None
    need = codewords * int(graph.meta["n"]) * CODEWORD_BYTES
    if need > EVAL_MEMORY:
        raise JobError(
            f"error: --codewords {codewords:,} of length {graph.meta['n']} need about {need / 2**30:.1f} GiB "
            f"of codewords and erasures, over {EVAL_MEMORY / 2**30:.0f} GiB; use fewer --codewords"
        )
    try:
        return decoders.compare(graph, {trained.shape.kind: trained}, list(eps), list(ts), codewords, seed)
    except ValueError as exc:
        raise JobError(f"error: {exc}") from None
