"""The knowledge-graph path and the output directory against a user's odd inputs: no label leaks, no lost work,
no silent wrong answers, no internal errors. One test per way they were found broken."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nlndl.cli import app
from nlndl.compiler.diagnostics import Diagnostics
from nlndl.compiler.triples import identifiers, kg_sketch
from nlndl.errors import Terminated
from nlndl.output import OutputDir, OutputError

ROOT = Path(__file__).resolve().parents[1]
LT = str(ROOT / "examples" / "ilp" / "less_than" / "sketch.dl")
runner = CliRunner()
QUICK = ["--max-iters", "20", "--time-limit", "2"]


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def assert_clean_exit(result, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


def write_graph(directory: Path, **splits: list[str] | str) -> Path:
    """Triple files: each split given as 'head rel tail' rows (spaces become tabs) or as raw text."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, rows in splits.items():
        text = rows if isinstance(rows, str) else "".join("\t".join(r.split()) + "\n" for r in rows)
        (directory / f"{name}.txt").write_text(text)
    return directory


def grandparents(directory: Path) -> Path:
    """The tiny graph G: a chain of parents, gp its two-step paths."""
    return write_graph(
        directory,
        facts=["a parent b", "b parent c", "c parent d", "d parent e"],
        train=["a gp c", "b gp d", "c gp e"],
        test=["a gp c"],
    )


def aunts(directory: Path) -> Path:
    """Families in which aunt is a sister of a parent, some aunts known in facts.txt, the others in train.txt."""
    facts, train = [], []
    for f in range(6):
        mother, sister, kids = f"m{f}", f"s{f}", [f"k{f}a", f"k{f}b"]
        facts += [f"{mother} sister {sister}", f"{sister} sister {mother}"]
        facts += [f"{mother} parent {k}" for k in kids]
        (facts if f < 2 else train).extend(f"{sister} aunt {k}" for k in kids)
    return write_graph(directory, facts=facts, train=train, test=["s5 aunt k5a"])


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- wrong results with no warning ---


def test_kg_train_refuses_to_rewrite_the_facts_of_a_sketch_in_the_same_directory(tmp_path):
    graph, shared = aunts(tmp_path / "B"), tmp_path / "X"
    assert invoke("kg", "sketch", graph, "--target", "aunt", "-o", shared).exit_code == 0
    before = snapshot(shared)
    result = invoke("kg", "train", graph, "-D", shared, "--relation", "aunt", *QUICK)
    assert_clean_exit(result)
    assert "written by nlndl kg sketch" in result.output and "aunt_fact.facts" in result.output
    assert snapshot(shared) == before, "the sketch's inputs are as kg sketch wrote them"
    facts = (shared / "aunt_fact.facts").read_text().splitlines()
    assert len(facts) == 4, "the target's facts.txt triples only, never train.txt's"


def test_resume_refuses_a_sketch_changed_in_a_way_the_shapes_do_not_show(tmp_path, monkeypatch):
    from nlndl.runtime.train import Trainer

    sketch = tmp_path / "lt.dl"
    sketch.write_text(Path(LT).read_text())
    real = Trainer.step

    def interrupted(self):
        if self.state.iteration == 5:
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(Trainer, "step", interrupted)
    out = tmp_path / "O"
    assert invoke("train", sketch, "-D", out, "-q").exit_code == 130
    monkeypatch.setattr(Trainer, "step", real)
    # lt(8, 9) no longer a positive: in the closed world a negative, so every tensor keeps its shape
    sketch.write_text(sketch.read_text().replace(".pos lt(8,9).", ""))
    checkpoint = snapshot(out / "lt.checkpoint")
    result = invoke("train", sketch, "-D", out, "-q", "--resume")
    assert_clean_exit(result)
    assert "cannot resume" in result.output and f"{sketch.resolve()} changed" in result.output
    assert snapshot(out / "lt.checkpoint") == checkpoint, "the checkpoint is left as it was"


def test_a_byte_order_mark_is_not_part_of_the_first_name(tmp_path):
    graph = grandparents(tmp_path / "G")
    for name in ("facts", "train"):
        path = graph / f"{name}.txt"
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    made = kg_sketch(graph, "gp", Diagnostics())
    assert made is not None and "\ufeff" not in made.text and '.pos gp("a", "c").' in made.text
    assert "\ufeff" not in made.facts["parent"]
    sketch = tmp_path / "s.dl"
    sketch.write_bytes(b"\xef\xbb\xbf" + Path(LT).read_bytes())
    assert invoke("compile", sketch).exit_code == 0


def test_a_valid_relation_name_keeps_itself_when_another_would_clash_with_it():
    out = identifiers(["a-b", "a_b", "x"])
    assert out == {"a-b": "a_b_2", "a_b": "a_b", "x": "x"}


def test_reserved_words_are_renamed_and_the_renaming_is_said(tmp_path):
    rows = ["a not b", "b not c", "c not d", "a count c", "b count d"]
    graph = write_graph(tmp_path / "R", facts=rows, train=["a sum c", "b sum d"], test=["c sum e"])
    made = kg_sketch(graph, "sum", Diagnostics())
    assert made is not None and made.relations == {"count": "r_count", "not": "r_not", "sum": "r_sum"}
    assert "// relations renamed: count -> r_count, not -> r_not, sum -> r_sum" in made.text
    out = tmp_path / "O"
    assert invoke("kg", "sketch", graph, "--target", "sum", "-o", out).exit_code == 0
    assert invoke("train", out / "sketch.dl", "-D", tmp_path / "T", "-q", "--max-iters", "20").exit_code in (0, 1)
    trained = invoke("kg", "train", graph, "-D", tmp_path / "K", *QUICK, "-q")
    assert trained.exit_code == 0, trained.output
    record = json.loads((tmp_path / "K" / "rules.json").read_text())
    assert record["renamed"] == {"count": "r_count", "not": "r_not", "sum": "r_sum"}
    assert (
        "relations renamed: count -> r_count, not -> r_not, sum -> r_sum" in (tmp_path / "K" / "rules.dl").read_text()
    )


def test_bench_kg_leaves_a_relation_without_test_triples_out_of_the_figures(tmp_path):
    graph = grandparents(tmp_path / "G")
    with (graph / "facts.txt").open("a") as handle:
        handle.write("x\tq\ty\n")
    with (graph / "train.txt").open("a") as handle:
        handle.write("x\tq\tz\n")
    report = tmp_path / "r.json"
    result = invoke("bench", "kg", graph, "--time-limit", "2", "--json", report, "-q")
    assert result.exit_code == 0, result.output
    assert "| q | 0 | no test triples |" in result.output
    data = json.loads(report.read_text())
    assert data["baseline"]["queries"] == 2 and data["nlndl"]["queries"] == 2, "gp's one triple, both directions"
    assert [r["relation"] for r in data["relations"]] == ["gp", "q"]


def test_bench_kg_counts_the_test_triples_of_a_relation_it_has_nothing_to_learn_from(tmp_path):
    graph = grandparents(tmp_path / "G")
    with (graph / "test.txt").open("a") as handle:
        handle.write("a\tnew\te\n")  # a relation in test.txt alone
    report = tmp_path / "r.json"
    result = invoke("bench", "kg", graph, "--baseline-only", "--json", report, "-q")
    assert result.exit_code == 0, result.output
    assert "| new | 1 | no training triples: ranked by no rule |" in result.output
    data = json.loads(report.read_text())
    new = next(r for r in data["relations"] if r["relation"] == "new")
    # five entities, nothing scored: each way the answer is tied with the other four, at rank 3
    assert new["baseline"]["queries"] == 2 and new["baseline"]["mrr"] == pytest.approx(1 / 3)
    assert data["baseline"]["queries"] == 4 and data["counted_top"]["queries"] == 4, "gp's and new's, both ways"


def test_kg_train_leaves_a_rule_that_derives_no_known_triple_out_of_the_program(tmp_path, monkeypatch):
    from nlndl import kg_rules
    from nlndl.compiler.crisp import BodyAtom, Rule

    learned = kg_rules.learn

    def with_a_wrong_rule(*args, **kwargs):  # as a read-out from an early stop can be: true of no known triple
        result = learned(*args, **kwargs)
        nowhere = BodyAtom("gp", (("v", "A"), ("v", "B")))
        result.rules.append(Rule("gp", (("v", "B"), ("v", "A")), (nowhere,)))
        return result

    monkeypatch.setattr(kg_rules, "learn", with_a_wrong_rule)
    out = tmp_path / "out"
    result = invoke("kg", "train", grandparents(tmp_path / "G"), "-D", out, *QUICK)
    assert result.exit_code == 0, result.output
    assert "gp(A, B) :- gp(B, A)" not in (out / "rules.dl").read_text()
    program = json.loads((out / "rules.json").read_text())["relations"][0]
    assert program["rules"] and all(c > 0 for c in program["confidences"])


def test_kg_train_prints_clauses_with_the_graphs_relation_names(tmp_path):
    """rules.dl spells has-parent as has_parent; the console, like kg predict and rules.tsv, keeps the graph's
    names."""
    graph = write_graph(
        tmp_path / "G",
        facts=["a has-parent b", "b has-parent c", "c has-parent d", "d has-parent e"],
        train=["a grand-parent c", "b grand-parent d", "c grand-parent e"],
    )
    out = tmp_path / "out"
    result = invoke("kg", "train", graph, "-D", out, *QUICK)
    assert result.exit_code == 0, result.output
    printed = [line.strip() for line in result.output.splitlines() if "% confidence" in line]
    assert printed and all(line.startswith("grand-parent(X,Y) :- ") for line in printed), result.output
    assert "has-parent(" in result.output and "has_parent(" not in result.output
    assert "grand_parent(A, B) :- " in (out / "rules.dl").read_text()


def test_a_program_that_derives_no_example_has_no_precision_to_print():
    from nlndl.verify import Score

    assert Score(positives=4, negatives=8).quality() == "no example derived, recall 0.000"
    assert Score(positives=4, negatives=8, true_positives=3, false_positives=1).quality() == (
        "precision 0.750, recall 0.750"
    )


def test_bench_kg_says_when_the_split_it_ranks_has_no_file(tmp_path):
    graph = grandparents(tmp_path / "G")
    result = invoke("bench", "kg", graph, "--split", "valid", "--baseline-only", "-q")
    assert_clean_exit(result)
    assert f"{graph / 'valid.txt'}: error: not found: --split valid ranks its triples" in result.output


def test_bench_kg_refuses_before_training_when_no_relation_has_a_test_triple(tmp_path):
    graph = grandparents(tmp_path / "G")
    (graph / "test.txt").write_text("a\tparent\tb\n")
    started = time.perf_counter()
    result = invoke("bench", "kg", graph, "--relation", "gp", "--time-limit", "30", "-q")
    assert_clean_exit(result)
    assert "no test triples of 'gp'" in result.output
    assert time.perf_counter() - started < 25, "refused up front, not after 30 s of training"


def test_validation_that_holds_out_nothing_is_said(tmp_path):
    result = invoke("train", LT, "-D", tmp_path / "O", "--validation", "0.01", "-q")
    assert_clean_exit(result)
    assert "holds out no example" in result.output


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_time_limits_that_json_cannot_hold_are_usage_errors(tmp_path, value):
    graph = grandparents(tmp_path / "G")
    for args in (["kg", "train", graph, "-D", tmp_path / "O"], ["train", LT, "-D", tmp_path / "T"]):
        result = invoke(*args, "--time-limit", value)
        assert_clean_exit(result, 2)
    assert not (tmp_path / "O").exists() and not (tmp_path / "T").exists()


# --- lost work and lost files ---


def test_a_users_directory_named_like_staging_is_left_alone(tmp_path):
    graph, out = grandparents(tmp_path / "G"), tmp_path / "o"
    notes = out / ".nlndl-staging-999999-notes" / "n.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("x\n")
    assert invoke("kg", "train", graph, "-D", out, *QUICK, "-q").exit_code == 0
    assert notes.read_text() == "x\n"


def test_a_killed_publish_leaves_a_staging_directory_that_the_next_run_removes(tmp_path):
    out = tmp_path / "o"
    stale = out / ".nlndl-staging-999999-abc"
    stale.mkdir(parents=True)
    (stale / ".nlndl-staging").write_text("nlndl's staging directory, process 999999\n")
    (stale / "rules.dl").write_text("half\n")
    OutputDir(out).publish(lambda staging: (staging / "a.txt").write_text("1"))
    assert not stale.exists() and (out / "a.txt").read_text() == "1"


def test_a_run_never_writes_over_its_own_sketch(tmp_path):
    graph = write_graph(
        tmp_path / "S", facts=["a parent b", "b parent c", "c parent d"], train=["a sketch c", "b sketch d"]
    )
    shared = tmp_path / "X"
    assert invoke("kg", "sketch", graph, "--target", "sketch", "-o", shared).exit_code == 0
    before = snapshot(shared)
    result = invoke("train", shared / "sketch.dl", "-D", shared, "-q")
    assert_clean_exit(result)
    assert "sketch.dl" in result.output and ("input of this run" in result.output or "written by" in result.output)
    assert snapshot(shared) == before
    own = tmp_path / "own"
    own.mkdir()
    (own / "lt.dl").write_text(Path(LT).read_text())
    result = invoke("train", own / "lt.dl", "-D", own, "-q")  # writes lt.dl: the sketch itself
    assert_clean_exit(result)
    assert (own / "lt.dl").read_text() == Path(LT).read_text()


@pytest.mark.parametrize("stop, code", [(KeyboardInterrupt, 130), (Terminated, 143)])
def test_kg_train_keeps_what_it_learned_when_stopped_and_resumes(tmp_path, monkeypatch, stop, code):
    from nlndl import kg_rules as kg

    rows = ["a parent b", "b parent c", "c parent d", "d parent e", "b sib f", "f sib b"]
    train = ["a gp c", "b gp d", "c gp e", "a un f", "c nep f", "e gp2 c", "d gp2 b"]
    graph = write_graph(tmp_path / "G", facts=rows, train=train)
    out = tmp_path / "o"
    real, calls = kg.learn_relation, []

    def stopped_at_the_third(*args, **kwargs):
        calls.append(args[2])
        if len(calls) == 3:
            raise stop()
        return real(*args, **kwargs)

    monkeypatch.setattr(kg, "learn_relation", stopped_at_the_third)  # in this process: --jobs 1
    result = invoke("kg", "train", graph, "-D", out, *QUICK, "--jobs", "1")
    assert result.exit_code == code, result.output
    assert "interrupted: 2 of 4 relations learned, kept in" in result.output and "--resume" in result.output
    assert len(list((out / "rules.checkpoint").glob("*.json"))) == 2 and not (out / "rules.dl").exists()
    monkeypatch.setattr(kg, "learn_relation", real)
    resumed = invoke("kg", "train", graph, "-D", out, *QUICK, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.count("kept from the interrupted run") == 2
    assert (out / "rules.dl").exists() and not (out / "rules.checkpoint").exists()
    whole = invoke("kg", "train", graph, "-D", tmp_path / "whole", *QUICK)
    assert whole.exit_code == 0
    assert (out / "rules.dl").read_text() == (tmp_path / "whole" / "rules.dl").read_text()
    assert json.loads((out / "rules.json").read_text())["resumed"] == ["gp", "gp2"]


def test_sigterm_stops_a_run_as_ctrl_c_does():
    code = (
        "import os, signal\n"
        "from nlndl.cli import stop_on_sigterm\n"
        "from nlndl.errors import Terminated\n"
        "stop_on_sigterm()\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "except Terminated:\n"
        "    print('stopped')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "stopped", done.stderr


def test_kg_train_resume_refuses_other_settings(tmp_path):
    graph, out = grandparents(tmp_path / "G"), tmp_path / "o"
    from nlndl.jobs import kg as jobs
    from nlndl.kg_rules import Graph, KGConfig, checkpoint_json, learn_relation

    config = KGConfig(time_limit=2, max_iters=20)
    one = learn_relation(graph, Graph.read(graph), "gp", config)
    record = {"stamp": jobs.kg_stamp(graph, config), "relation": checkpoint_json(one)}
    OutputDir(out, "kg train").publish(
        lambda s: (s / "rules.checkpoint").mkdir() or (s / jobs.kg_checkpoint_file("gp")).write_text(json.dumps(record))
    )
    result = invoke("kg", "train", graph, "-D", out, "--resume", "--seed", "3", *QUICK)
    assert_clean_exit(result)
    assert "--seed was 0, is 3" in result.output
    (graph / "train.txt").write_text("a\tgp\tc\nb\tgp\td\n")
    result = invoke("kg", "train", graph, "-D", out, "--resume", *QUICK)
    assert_clean_exit(result)
    assert "train.txt changed" in result.output
    assert_clean_exit(invoke("kg", "train", graph, "-D", tmp_path / "none", "--resume", *QUICK))


def test_a_rename_that_fails_midway_names_the_file_and_the_next_run_says_what_is_mixed(tmp_path, monkeypatch):
    out = tmp_path / "D"

    def writes(content: str):
        def write(staging: Path) -> None:
            for name in ("a.json", "b.lp", "c.dl"):
                (staging / name).write_text(content)

        return write

    OutputDir(out).publish(writes("old"))
    real = os.replace

    def refuses_b(src, dst, *args, **kwargs):
        if str(dst).endswith("b.lp"):
            raise OSError(errno.EPERM, "Operation not permitted")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", refuses_b)
    with pytest.raises(OutputError) as caught:
        OutputDir(out).publish(writes("new"))
    message = str(caught.value)
    assert f"{out / 'b.lp'}: error: cannot replace it: Operation not permitted" in message
    assert "a.json new, b.lp, c.dl from before" in message
    monkeypatch.setattr(os, "replace", real)
    again = OutputDir(out)
    assert again.mixed == {"new": ["a.json"], "old": ["b.lp", "c.dl"]}
    assert "cut short" in again.mixed_note()
    again.publish(writes("newer"))
    assert OutputDir(out).mixed == {} and OutputDir(out).mixed_note() is None
    assert snapshot(out)["b.lp"] == b"newer"


# --- internal errors, hangs, promises ---


def test_an_empty_entities_file_is_a_located_error(tmp_path):
    graph = grandparents(tmp_path / "G")
    (graph / "entities.txt").write_text("")
    for args in (
        ["kg", "sketch", graph, "--target", "gp", "-o", tmp_path / "O"],
        ["kg", "train", graph, "-D", tmp_path / "T", *QUICK],
        ["bench", "kg", graph, "--time-limit", "2"],
    ):
        result = invoke(*args)
        assert_clean_exit(result)
        assert f"{graph / 'entities.txt'}:1:1: error: no entities" in result.output


@pytest.mark.parametrize("seed", [str(2**63), str(2**64), str(2**70)])
def test_seeds_share_one_range_checked_at_the_option(tmp_path, seed):
    graph = grandparents(tmp_path / "G")
    for args in (
        ["train", LT, "-D", tmp_path / "T"],
        ["kg", "train", graph, "-D", tmp_path / "K"],
        ["kg", "sketch", graph, "--target", "gp", "-o", tmp_path / "S"],
    ):
        result = invoke(*args, "--seed", seed)
        assert_clean_exit(result, 2)
        assert "--seed" in result.output
    assert (
        invoke("kg", "sketch", graph, "--target", "gp", "-o", tmp_path / "S", "--seed", str(2**63 - 1)).exit_code == 0
    )


def test_negatives_beyond_what_the_graph_can_give_are_refused_up_front(tmp_path):
    graph = grandparents(tmp_path / "G")
    started = time.perf_counter()
    result = invoke("kg", "sketch", graph, "--target", "gp", "-o", tmp_path / "O", "--negatives", "1000000000")
    assert_clean_exit(result)
    assert "at most 8 corruptions in a graph of 5 entities" in result.output
    assert time.perf_counter() - started < 10
    assert invoke("kg", "sketch", graph, "--target", "gp", "-o", tmp_path / "O", "--negatives", "8").exit_code == 0


def test_a_name_too_long_for_the_file_system_is_refused_before_training(tmp_path):
    long = "r" * 300
    graph = write_graph(tmp_path / "L", facts=["a p b", "b p c", "c p d"], train=[f"a {long} c", f"b {long} d"])
    for json_flag in ((), ("--json",)):
        started = time.perf_counter()
        result = invoke("kg", "train", graph, "-D", tmp_path / "new" / "out", "--time-limit", "30", *json_flag)
        assert_clean_exit(result)
        assert "file name too long" in result.output
        assert time.perf_counter() - started < 25, "refused before the 30 s of training"
    assert not (tmp_path / "new").exists()


def test_rules_that_cannot_be_saved_are_printed_with_json(tmp_path, monkeypatch):
    from nlndl.jobs import kg as jobs

    def full(*args, **kwargs):
        raise OutputError("OUT: error: cannot write the output: No space left on device")

    monkeypatch.setattr(jobs, "save", full)
    result = invoke("kg", "train", grandparents(tmp_path / "G"), "-D", tmp_path / "O", *QUICK, "--json")
    assert_clean_exit(result)
    assert "rules learned (not saved)" in result.output and "gp(A, B) :- parent(A, C), parent(C, B)." in result.output


def test_memory_limits_hold_for_entities_and_bench_kg(tmp_path):
    graph = grandparents(tmp_path / "G")
    (graph / "entities.txt").write_text("".join(f"e{i}\n" for i in range(2000)))
    result = invoke("kg", "sketch", graph, "--target", "gp", "-o", tmp_path / "O", "--memory-limit", "64KiB")
    assert_clean_exit(result)
    assert "entities.txt" in result.output and "raise --memory-limit" in result.output
    result = invoke("bench", "kg", graph, "--memory-limit", "64KiB", "--time-limit", "2")
    assert_clean_exit(result)
    assert "raise --memory-limit" in result.output


def test_check_reads_nlndls_own_mangled_names(tmp_path):
    graph = write_graph(
        tmp_path / "U", facts=["a Parent b", "b Parent c", "c Parent d", "d Parent e"], train=["a Gp c", "b Gp d"]
    )
    sketches, out = tmp_path / "S", tmp_path / "O"
    assert invoke("kg", "sketch", graph, "--target", "Gp", "-o", sketches).exit_code == 0
    assert invoke("kg", "train", graph, "-D", out, *QUICK, "-q").exit_code == 0
    assert "r_Gp(" in (out / "rules.dl").read_text()
    result = invoke("check", out / "rules.dl", sketches / "sketch.dl", "-F", sketches)
    assert result.exit_code == 0, result.output
    trained = invoke("train", sketches / "sketch.dl", "-D", tmp_path / "T", "-q", "--max-iters", "200")
    assert trained.exit_code == 0, trained.output
    result = invoke("check", tmp_path / "T" / "Gp.dl", sketches / "sketch.dl", "-F", sketches)
    assert result.exit_code == 0, result.output


def test_a_newline_in_the_data_directory_name_stays_out_of_the_sketch(tmp_path):
    graph = grandparents(tmp_path / "odd\nname")
    out = tmp_path / "O"
    assert invoke("kg", "sketch", graph, "--target", "gp", "-o", out).exit_code == 0
    assert "odd\\nname" in (out / "sketch.dl").read_text()
    assert invoke("compile", out / "sketch.dl").exit_code == 0
    trained = invoke("kg", "train", graph, "-D", tmp_path / "T", *QUICK, "-q")
    assert trained.exit_code == 0, trained.output
    assert "odd\\nname" in (tmp_path / "T" / "rules.dl").read_text()


def test_export_says_what_a_kg_train_record_is(tmp_path):
    out = tmp_path / "O"
    assert invoke("kg", "train", grandparents(tmp_path / "G"), "-D", out, *QUICK, "-q").exit_code == 0
    result = invoke("export", out / "rules.json")
    assert_clean_exit(result)
    assert "record of nlndl kg train" in result.output and "rules.dl" in result.output
    assert "KeyError" not in result.output
