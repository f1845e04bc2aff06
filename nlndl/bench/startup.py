"""Start-up benchmark: whole-process ``nlndl train`` of small bundled tasks against the import floor.

The floor is ``python -c "import torch, clingo"``, the two libraries every training run needs. Each task's
``nlndl train`` and the floor run alternately, each in a fresh process, so that a busy machine slows both
alike; the medians and their ratio are reported side by side.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nlndl.bench.scale import run_nlndl

TASKS = ("less_than", "predecessor", "even", "grandparent", "sibling")  # bundled: examples/ilp/<name>
FLOOR = (sys.executable, "-c", "import torch, clingo")


def measure(
    examples: Path, tasks: list[str], repeats: int, tell: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Per task, ``repeats`` whole-process seconds of ``nlndl train TASK -q`` and of the floor, alternately;
    their medians and ratio."""
    rows = []
    for name in tasks:
        sketch = examples / name / "sketch.dl"
        if tell:
            tell(name)
        floor, train, solved = [], [], True
        for _ in range(repeats):
            _, seconds, _, _ = run_nlndl([], None, launcher=FLOOR)
            floor.append(seconds)
            with tempfile.TemporaryDirectory(prefix="nlndl-startup-") as tmp:
                code, seconds, _, _ = run_nlndl(["train", str(sketch), "-D", tmp, "-q"], None)
            train.append(seconds)
            solved = solved and code == 0
        low, whole = statistics.median(floor), statistics.median(train)
        rows.append(
            {"task": name, "floor": floor, "train": train, "floor_median": low, "train_median": whole,
             "ratio": whole / low, "solved": solved}
        )  # fmt: skip
    return {"repeats": repeats, "python": sys.version.split()[0], "bytecode_cache": bytecode_cache(), "rows": rows}


def bytecode_cache() -> bool:
    """Whether the processes measured load nlndl's own modules compiled (``__pycache__``), as the floor loads
    torch's and clingo's: Python writes them at the first run unless ``PYTHONDONTWRITEBYTECODE`` is set, and
    then only ``python -m compileall`` does (the README's install runs it); else every run compiles them again.
    Judged by one module the training imports."""
    if not sys.flags.dont_write_bytecode:
        return True
    import nlndl.learn

    return compiled(Path(nlndl.learn.__file__))


def compiled(source: Path) -> bool:
    """Whether ``source`` has a compiled file in ``__pycache__`` that Python would load: made from the source
    as it is (the modification time and size its header records)."""
    import importlib.util

    try:
        header = Path(importlib.util.cache_from_source(str(source))).read_bytes()[:16]
        stat = source.stat()
    except OSError:
        return False
    flags, mtime, size = (int.from_bytes(header[i : i + 4], "little") for i in (4, 8, 12))
    return flags == 0 and mtime == int(stat.st_mtime) & 0xFFFFFFFF and size == stat.st_size & 0xFFFFFFFF


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| task | import torch, clingo (median s) | nlndl train (median s) | ratio | solved |",
        "|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        lines.append(
            f"| {row['task']} | {row['floor_median']:.2f} | {row['train_median']:.2f} | {row['ratio']:.2f} | "
            f"{'yes' if row['solved'] else 'NO'} |"
        )
    cache = "" if report.get("bytecode_cache", True) else "; PYTHONDONTWRITEBYTECODE set: nlndl compiled at every run"
    return "\n".join(lines) + f"\n\n{report['repeats']} runs of each, alternating, each a fresh process{cache}"
