"""Knowledge graphs as triples: `nlndl kg sketch` writes a sketch with the graph's relations as background,
the target's triples as positives and corrupted ones as negatives (open world), or a located error."""

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from nlndl.cli import app
from nlndl.compiler import compile_sketch
from nlndl.compiler.diagnostics import Diagnostics
from nlndl.compiler.triples import corrupt, identifiers, kg_sketch

runner = CliRunner()


def family(tmp_path: Path) -> Path:
    """Six families: a mother with two children and a sister of the mother; aunt = sister of a parent."""
    facts, train, valid = [], [], []
    for f in range(6):
        mother, sister, kids = f"m{f}", f"s{f}", [f"k{f}a", f"k{f}b"]
        facts += [f"{mother}\tsister\t{sister}", f"{sister}\tsister\t{mother}"]
        facts += [f"{mother}\tparent\t{k}" for k in kids] + [f"{kids[0]}\tsibling\t{kids[1]}"]
        (train if f < 4 else valid).extend(f"{sister}\taunt\t{k}" for k in kids)
    directory = tmp_path / "kg"
    directory.mkdir(parents=True)
    for name, rows in (("facts", facts), ("train", train), ("valid", valid)):
        (directory / f"{name}.txt").write_text("".join(r + "\n" for r in rows))
    return directory


def test_kg_sketch_reads_the_graph_and_corrupts_the_positives(tmp_path):
    directory = family(tmp_path)
    made = kg_sketch(directory, "aunt", Diagnostics(), negatives=2, seed=0)
    assert made is not None and made.positives == 8 and made.negatives == 16
    assert set(made.facts) == {"parent", "sibling", "sister"}
    known = {(f"s{f}", f"k{f}{c}") for f in range(6) for c in "ab"}  # valid.txt's too: never a negative
    negatives = [line for line in made.text.splitlines() if line.startswith(".neg")]
    assert len(negatives) == 16 and not any(f'aunt("{h}", "{t}")' in line for h, t in known for line in negatives)
    again = kg_sketch(directory, "aunt", Diagnostics(), negatives=2, seed=0)
    assert again.text == made.text
    assert kg_sketch(directory, "aunt", Diagnostics(), negatives=2, seed=1).text != made.text


def test_corrupt_changes_the_head_or_the_tail_and_never_a_known_pair():
    rng = np.random.default_rng(0)
    positives = [("a", "b"), ("c", "d")]
    drawn = corrupt(positives, list("abcdefgh"), set(positives), 3, rng)
    assert len(drawn) == 6 and len(set(drawn)) == 6 and not set(drawn) & set(positives)
    for i, (h, t) in enumerate(drawn):
        head, tail = positives[i // 3]
        assert h == head or t == tail


def test_relation_names_become_distinct_identifiers():
    out = identifiers(["/film/actor", "_film_actor", "1abc", "aunt"])
    assert out["aunt"] == "aunt" and out["1abc"] == "r_1abc"
    assert len(set(out.values())) == 4 and out["/film/actor"].startswith("_film_actor")


def test_cli_writes_a_sketch_that_learns_sister_of_parent(tmp_path):
    directory = family(tmp_path)
    out = tmp_path / "out"
    result = runner.invoke(app, ["kg", "sketch", str(directory), "--target", "aunt", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "8 positive and 16 corrupted negative examples" in result.output
    assert compile_sketch(out / "sketch.dl").closed == []
    trained = runner.invoke(app, ["train", str(out / "sketch.dl"), "-D", str(tmp_path / "rules"), "--json", "-q"])
    assert trained.exit_code == 0, trained.output
    (rule,) = json.loads(trained.output.splitlines()[0])["rules"]
    assert rule in ("aunt(A, B) :- sister(A, C), parent(C, B).", "aunt(A, B) :- parent(C, B), sister(C, A).")


def test_a_malformed_triple_file_is_a_located_error_and_nothing_is_written(tmp_path):
    directory = family(tmp_path)
    with (directory / "train.txt").open("a") as f:
        f.write("s0\taunt\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["kg", "sketch", str(directory), "--target", "aunt", "-o", str(out)])
    assert result.exit_code == 1
    assert f"{directory / 'train.txt'}:9:1: error: expected 3 tab-separated fields, got 2" in result.output
    assert not out.exists()
    directory = family(tmp_path / "clean")
    result = runner.invoke(app, ["kg", "sketch", str(directory), "--target", "uncle", "-o", str(out)])
    assert result.exit_code == 1 and "no relation 'uncle' in the graph" in result.output


def test_a_triple_separated_by_spaces_is_named_as_such(tmp_path):
    directory = family(tmp_path)
    with (directory / "train.txt").open("a") as f:
        f.write("s0 aunt k9\ns0 aunt\n")
    result = runner.invoke(app, ["kg", "sketch", str(directory), "--target", "aunt", "-o", str(tmp_path / "out")])
    assert result.exit_code == 1
    spaced = "expected 3 tab-separated fields, got 1 (it splits into 3 at spaces: separate the fields with tabs)"
    assert f"train.txt:9:1: error: {spaced}" in result.output
    assert "train.txt:10:1: error: expected 3 tab-separated fields, got 1\n" in result.output


def test_kg_sketch_never_overwrites_a_file_it_did_not_write(tmp_path):
    directory = family(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "sketch.dl").write_text("mine\n")
    result = runner.invoke(app, ["kg", "sketch", str(directory), "--target", "aunt", "-o", str(out)])
    assert result.exit_code == 1 and (out / "sketch.dl").read_text() == "mine\n"
