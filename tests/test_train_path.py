"""``nlndl train`` followed from the sketch to the written files: the stages are entered in the data path's
order, the compiler is done before training starts, and what later stages decode from the compiled program
(worlds, symbols, names) and the memory fit happen once."""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from nlndl.cli import app

ROOT = Path(__file__).resolve().parents[1]
SKETCH = ROOT / "examples" / "ilp" / "less_than" / "sketch.dl"
# the data path, each stage by the function that does its work: parse -> check -> ground -> lower -> fit the
# memory -> run (train) -> extract -> verify -> export
STAGES = [
    ("nlndl.compiler.parser", "parse_file"),
    ("nlndl.compiler.check", "check"),
    ("nlndl.compiler.ground", "ground_worlds"),
    ("nlndl.compiler.lowering", "lower"),
    ("nlndl.learn", "fit"),
    ("nlndl.runtime.train", "fit"),
    ("nlndl.extract", "extract"),
    ("nlndl.verify", "clingo_score"),
    ("nlndl.export", "write_program"),
]
COMPILER = {"nlndl.compiler.parser", "nlndl.compiler.check", "nlndl.compiler.ground", "nlndl.compiler.lowering"}
ONCE = [  # (module, function): computed once per run
    ("nlndl.verify", "_checked_worlds"),
    ("nlndl.compiler.symbols", "from_json"),
    ("nlndl.datalog", "for_relations"),
    ("nlndl.runtime.budget", "fit_training"),
]


def trace_train(tmp_path: Path) -> list[tuple[str, str]]:
    """Every call of an nlndl function (module, name) while ``nlndl train`` runs, in order."""
    calls: list[tuple[str, str]] = []

    def profile(frame, event, arg):  # noqa: ANN001, ANN202 (sys.setprofile's signature)
        code = frame.f_code
        if event != "call" or not code.co_flags & inspect.CO_NEWLOCALS or code.co_name == "__create_fn__":
            return  # a module or class body run by an import, or a dataclass being made
        module = frame.f_globals.get("__name__", "")
        if module.startswith("nlndl"):
            calls.append((module, code.co_name))

    sys.setprofile(profile)
    try:
        result = CliRunner().invoke(app, ["train", str(SKETCH), "-D", str(tmp_path / "out"), "--quiet"])
    finally:
        sys.setprofile(None)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "lt.dl").is_file()
    return calls


def test_train_runs_the_stages_in_the_data_paths_order_and_decodes_once(tmp_path):
    calls = trace_train(tmp_path)
    first = {stage: calls.index(stage) for stage in STAGES}
    order = sorted(STAGES, key=first.__getitem__)
    assert order == STAGES, f"stages first run in this order: {order}"
    training = first[("nlndl.runtime.train", "fit")]
    back = sorted({call for call in calls[training:] if call[0] in COMPILER})
    assert not back, f"the compiler ran again after training started: {back}"
    counts = Counter(calls)
    assert all(counts[key] == 1 for key in ONCE), {f"{m}.{f}": counts[(m, f)] for m, f in ONCE}
