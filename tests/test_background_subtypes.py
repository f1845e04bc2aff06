"""A learned program as the next task's background (-B), and subtypes in candidate atoms."""

import itertools
import json
from pathlib import Path

from typer.testing import CliRunner

from nlndl.cli import app
from nlndl.compiler import CompileError, compile_sketch
from nlndl.compiler.ir import InputAtom

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

SUBTYPES = """
.type L <: symbol
.type Pair <: L
.decl eq(x: L, y: L)
.decl pair(l: Pair)
.decl p(x: L)
eq("a","a"). eq("ab","ab"). eq("ba","ba").
pair("ab"). pair("ba"). pair("cd").
.learn p(vars=2, types=[Pair], body=[eq, pair])
.pos p("ab"). .neg p("a").
.closed p
"""


def test_a_subtype_variable_stands_at_its_supertype(tmp_path):
    path = tmp_path / "s.dl"
    path.write_text(SUBTYPES)
    program = compile_sketch(path)
    world, ir = program.worlds[0], program.learned["p"]
    symbols = program.symbols
    assert ir.var_types == ("L", "Pair")
    # "cd" occurs only in pair(Pair) facts, yet it is an L: a subtype's constants belong to its supertype
    assert {symbols[c] for c in world.domains["L"]} == {"a", "ab", "ba", "cd"}
    assert {symbols[c] for c in world.domains["Pair"]} == {"ab", "ba", "cd"}
    assert InputAtom("eq", (0, 1)) in ir.inputs and InputAtom("pair", (1,)) in ir.inputs
    assert InputAtom("pair", (0,)) not in ir.inputs, "an L variable cannot stand where a Pair is expected"
    column = ir.inputs.index(InputAtom("eq", (1, 0)))
    seen = set()
    for gather in world.gather("p")[:, column]:
        name, args = world.decode_slot(int(gather))
        assert name == "eq"
        seen.add(tuple(symbols[c] for c in args))
    # every (Pair, L) substitution reads eq at the right constants, through the supertype's positions
    assert seen == set(itertools.product(["ab", "ba", "cd"], ["a", "ab", "ba", "cd"]))


GT = """
.type Num <: number
.decl zero(x: Num)
.decl succ(x: Num, y: Num)
.decl lt(x: Num, y: Num)
.decl gt(x: Num, y: Num)
zero(0). succ(0,1). succ(1,2). succ(2,3). succ(3,4). succ(4,5).
.learn gt(vars=2, terms=1, body=[lt])
.closed gt
.pos gt(1,0). .pos gt(2,0). .pos gt(3,0). .pos gt(4,0). .pos gt(5,0). .pos gt(2,1). .pos gt(3,1). .pos gt(4,1).
.pos gt(5,1). .pos gt(3,2). .pos gt(4,2). .pos gt(5,2). .pos gt(4,3). .pos gt(5,3). .pos gt(5,4).
"""


def test_train_chains_a_learned_program_as_background(tmp_path):
    """Learn lt, then learn gt with the learned lt as its background, from the CLI."""
    lt = runner.invoke(
        app, ["train", str(ROOT / "examples/ilp/less_than/sketch.dl"), "-D", str(tmp_path / "lt"), "--json"]
    )
    assert lt.exit_code == 0, lt.output
    sketch = tmp_path / "gt.dl"
    sketch.write_text(GT)
    without = runner.invoke(app, ["train", str(sketch), "-D", str(tmp_path / "x"), "--max-iters", "40"])
    assert without.exit_code == 1, "lt has no facts here: without the background gt cannot be learned"
    args = ["train", str(sketch), "-B", str(tmp_path / "lt" / "lt.dl"), "-D", str(tmp_path / "gt"), "--json"]
    gt = runner.invoke(app, args)
    assert gt.exit_code == 0, gt.output
    assert json.loads(gt.output)["rules"] == ["gt(A, B) :- lt(B, A)."]
    record = json.loads((tmp_path / "gt" / "gt.json").read_text())
    assert record["background"] == ["../lt/lt.dl"] and record["sketch"] == "../gt.dl", "relative to the record"
    exported = runner.invoke(app, ["export", str(tmp_path / "gt" / "gt.json"), "--format", "clingo"])
    assert exported.exit_code == 0 and "gt(A, B) :- lt(B, A)." in exported.output
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    for name in ("gt", "lt", "gt.dl"):
        (tmp_path / name).rename(moved / name)
    again = runner.invoke(app, ["export", str(moved / "gt" / "gt.json"), "--format", "clingo"])
    assert again.exit_code == 0 and "gt(A, B) :- lt(B, A)." in again.output, "the record moved with its inputs"


def test_background_errors_are_located(tmp_path):
    sketch = tmp_path / "gt.dl"
    sketch.write_text(GT)
    bad = tmp_path / "bad.dl"
    bad.write_text(".decl lt(x: symbol, y: Num)\nlt(X,Y) :- succ(X,Y).\n.pos lt(0,1).\n")
    try:
        compile_sketch(sketch, background=(bad,))
    except CompileError as exc:
        text = exc.diagnostics.render()
    else:
        raise AssertionError("a conflicting background program compiled")
    assert f"{bad}:1:7: error: lt(symbol, Num) differs from the sketch's declaration" in text
    assert f"{bad}:3:1: error: an example in a background program" in text
    result = runner.invoke(app, ["compile", str(sketch), "-B", str(bad)])
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_bench_runs_a_chained_task_on_the_first_tasks_rules(tmp_path):
    from nlndl.bench import ilp

    sketch = tmp_path / "gt.dl"
    sketch.write_text(GT)
    first = ilp.Task("First", ROOT / "examples/ilp/less_than/sketch.dl")
    second = ilp.Task("Second", sketch, after=first)
    rows = {r["name"]: r for r in ilp.run([first, second], 1, 2000, None)["tasks"]}
    assert rows["First"]["solved"] == 1 and rows["Second"]["solved"] == 1
    assert rows["Second"]["background_from"] == "First" and rows["Second"]["rules"] == ["gt(A, B) :- lt(B, A)."]
    # when the first task fails from a seed, the chained one has nothing to build on and fails too
    rows = {r["name"]: r for r in ilp.run([first, second], 1, 1, None)["tasks"]}
    assert rows["First"]["solved"] == 0 and rows["Second"]["solved"] == 0
    assert rows["Second"]["failures"][0]["accuracy"]["true_positives"] == 0
