"""``nlndl compile`` end to end: summaries, JSON keys, outputs never clobber user files."""

import json
from pathlib import Path

from typer.testing import CliRunner

from nlndl.cli import app
from nlndl.compiler.ir import CompiledProgram

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_compile_bundled_sketches_json():
    for task in ("less_than", "connectedness", "grandparent", "addition"):
        result = runner.invoke(app, ["compile", str(ROOT / "examples/ilp" / task / "sketch.dl"), "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output)
        for key in ("predicates", "strata", "atoms", "substitutions", "pruned", "index_entries", "bytes"):
            assert key in summary
        assert summary["substitutions"] > 0 and summary["bytes"] > 0


def test_compile_saves_and_replaces_only_programs(tmp_path):
    sketch = str(ROOT / "examples/ilp/connectedness/sketch.dl")
    out = tmp_path / "prog"
    assert runner.invoke(app, ["compile", sketch, "-o", str(out)]).exit_code == 0
    assert CompiledProgram.load(out).summary()["atoms"] == 32
    assert runner.invoke(app, ["compile", sketch, "-o", str(out)]).exit_code == 0, "a program may be replaced"
    precious = tmp_path / "notes"
    precious.mkdir()
    (precious / "thesis.tex").write_text("keep me")
    (precious / "program.json").write_text("mine")
    result = runner.invoke(app, ["compile", sketch, "-o", str(precious)])
    assert result.exit_code == 1 and "refusing to overwrite" in result.output
    assert (precious / "thesis.tex").read_text() == "keep me" and (precious / "program.json").read_text() == "mine"


def test_show_dumps(tmp_path):
    sketch = str(ROOT / "examples/ilp/less_than/sketch.dl")
    result = runner.invoke(app, ["compile", sketch, "--show", "depgraph", "--show", "strata", "--show", "ir"])
    assert result.exit_code == 0
    assert "succ -> lt (learned)" in result.output and "recursive: lt" in result.output
    assert "inputs (" in result.output and "succ(A,B)" in result.output


def test_fact_dir_and_missing_facts(tmp_path):
    sketch = ROOT / "examples/ilp/connectedness/sketch.dl"
    result = runner.invoke(app, ["compile", str(sketch), "-F", str(tmp_path)])
    assert result.exit_code == 1 and "error: cannot read facts file" in result.output
    (tmp_path / "edge.facts").write_text("a\tb\nb\n")
    result = runner.invoke(app, ["compile", str(sketch), "-F", str(tmp_path)])
    assert result.exit_code == 1 and "edge.facts:2:1: error: expected 2 tab-separated fields, got 1" in result.output


def test_usage_errors_exit_2():
    assert runner.invoke(app, ["compile", "no/such/file.dl"]).exit_code == 2
    sketch = str(ROOT / "examples/ilp/less_than/sketch.dl")
    assert runner.invoke(app, ["compile", sketch, "--memory-limit", "lots"]).exit_code == 2
    assert runner.invoke(app, ["compile", sketch, "--show", "everything"]).exit_code == 2


def test_memory_limit_flag():
    sketch = str(ROOT / "examples/ilp/addition/sketch.dl")
    result = runner.invoke(app, ["compile", sketch, "--memory-limit", "4MiB"])
    assert result.exit_code == 1
    assert "sketch.dl:15:8: error: the index arrays would take 5.4 MiB, over the limit of 4.0 MiB" in result.output
    result = runner.invoke(app, ["compile", sketch, "--memory-limit", "2MiB"])  # the joins' bindings first
    assert result.exit_code == 1
    assert "error: add in world main: enumerating the substitutions would hold 21,600 candidate bindings" in (
        result.output
    )


def test_a_recursive_example_with_a_constant_in_no_fact_is_warned_of(tmp_path):
    # path may read path, so no candidate atom rules an example out; but a clause without constants derives
    # only atoms over the facts' constants, and "x y" is in none ('"x y"' in a facts file is another symbol)
    (tmp_path / "edge.facts").write_text('a\tb\nb\tc\n"x y"\tz\n')
    sketch = tmp_path / "s.dl"
    sketch.write_text(
        ".decl edge(x: symbol, y: symbol)\n.input edge\n.decl path(x: symbol, y: symbol)\n.learn path(vars=3)\n"
        '.pos path("a","b").\n.pos path("a","c").\n.pos path("x y","z").\n'
    )
    result = runner.invoke(app, ["compile", str(sketch), "-F", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning:") == 1
    assert f"{sketch}:7:1: warning: no learnable clause derives this positive example: a constant of it occurs" in (
        result.stderr
    )


def test_an_underivable_positive_example_is_warned_at_its_line(tmp_path):
    # "zz" occurs in no fact: no safe clause binds p's head variable there; a typo the user should see
    # before training, while the compile itself succeeds (exit 0)
    sketch = tmp_path / "s.dl"
    sketch.write_text(
        '.decl e(a: symbol, b: symbol)\n.decl p(a: symbol)\ne("a","b"). e("b","c").\n.learn p(vars=2)\n'
        '.pos p("a").\n.pos p("zz").\n.neg p("c").\n'
    )
    result = runner.invoke(app, ["compile", str(sketch)])
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning:") == 1
    assert f"{sketch}:6:1: warning: no learnable clause derives this positive example" in result.stderr
    assert '.pos p("zz").' in result.stderr
    clean = runner.invoke(app, ["compile", str(ROOT / "examples/ilp/less_than/sketch.dl")])
    assert clean.exit_code == 0 and "warning" not in clean.stderr
