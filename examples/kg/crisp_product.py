"""Training time of knowledge-graph relations with their crisp columns dense and sparse, side by side.

``python examples/kg/crisp_product.py ../shared/data/kg/kinship --relation Term8 --iters 200 --rounds 2``
learns each relation as ``nlndl kg train`` does (one thread), for a fixed number of iterations (no early
stop), alternately with the crisp part of the first level as a dense product and as a sparse one
(:mod:`nlndl.runtime.sparse_crisp`), and prints one JSON object: per run the training seconds, seconds per
iteration and clauses read out, and per relation the median ratio dense / sparse. ``--json`` writes it to a
file too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from unittest.mock import patch

import torch

from nlndl.kg_rules import KGConfig, learn_relation, read_graph
from nlndl.runtime import sparse_crisp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--relation", action="append", required=True)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    graph = read_graph(args.data)
    runs, ratios = [], {}
    for relation in args.relation:
        seconds: dict[str, list[float]] = {"dense": [], "sparse": []}
        for _ in range(args.rounds):
            for mode in ("dense", "sparse"):
                never = 10**30 if mode == "dense" else sparse_crisp.MIN_DENSE_WORK
                config = KGConfig(max_iters=args.iters, time_limit=1e9, pool_patience=10**9, noise_patience=10**9)
                with patch.object(sparse_crisp, "MIN_DENSE_WORK", never):
                    learned = learn_relation(args.data, graph, relation, config)
                result = learned.result
                seconds[mode].append(result.seconds)
                runs.append(
                    {
                        "relation": relation,
                        "crisp": mode,
                        "iterations": result.iterations,
                        "seconds": round(result.seconds, 2),
                        "ms_per_iteration": round(1000 * result.seconds / max(result.iterations, 1), 1),
                        "clauses": len(learned.clauses),
                    }
                )
                print(json.dumps(runs[-1]), flush=True)
        ratios[relation] = round(statistics.median(seconds["dense"]) / statistics.median(seconds["sparse"]), 2)
    report = {
        "command": "python " + " ".join(sys.argv),
        "data": str(args.data),
        "iterations": args.iters,
        "runs": runs,
        "dense_over_sparse": ratios,
    }
    print(json.dumps(report))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
