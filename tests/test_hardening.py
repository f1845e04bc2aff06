"""The promises of the README's Guarantees section, one test per way they were found broken: nothing the user
had is overwritten or deleted, outputs appear whole or not at all, bad input gets a located error and exit 1
(never a traceback), and work that would not fit is refused up front with the estimate."""

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nlndl import __version__
from nlndl.cli import app
from nlndl.compiler.ir import CompiledProgram
from nlndl.output import MANIFEST, OutputDir, OutputError, parse_size
from nlndl.runtime.train import Trainer

ROOT = Path(__file__).resolve().parents[1]
ILP = ROOT / "examples" / "ilp"
PRED = str(ILP / "predecessor" / "sketch.dl")  # solved within a few iterations
LT = str(ILP / "less_than" / "sketch.dl")  # not solved within 5 iterations: leaves a checkpoint
runner = CliRunner()
FACTS_SKETCH = ".decl r(x: symbol, y: number)\n.input r\n.decl q(x: symbol)\n.learn q(vars=1)\n.pos q(a).\n"


def train(*args: str):
    return runner.invoke(app, ["train", *args, "-q"])


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (links not followed) with its contents."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_clean_exit(result, code: int = 1) -> None:
    """The command ended with ``code`` and a message, not an exception."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


# --- nothing the user had is lost ---


@pytest.mark.parametrize("name", ["pred.main.facts.lp", "pred.main.facts/succ.facts", "pred.json", "pred.dl"])
def test_train_never_overwrites_a_file_it_did_not_write(tmp_path, name):
    out = tmp_path / "O"
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    # contents that a guess from the text would take for nlndl's own
    (out / name).write_text('// Learned by nlndl\n{"nlndl": "0.1.0"}\n')
    before = snapshot(out)
    result = train(PRED, "-D", str(out))
    assert_clean_exit(result)
    assert "was not written by nlndl" in result.output and name in result.output
    assert snapshot(out) == before, "nothing written, nothing changed"


def test_train_replaces_its_own_output_but_not_a_changed_one(tmp_path):
    out = tmp_path / "O"
    assert train(PRED, "-D", str(out)).exit_code == 0
    manifest = json.loads((out / MANIFEST).read_text())
    assert {"pred.dl", "pred.lp", "pred.json", "pred.main.facts.lp", "pred.main.facts/succ.facts"} <= set(
        manifest["files"]
    )
    assert train(PRED, "-D", str(out)).exit_code == 0, "nlndl's own output is replaced"
    (out / "pred.main.facts" / "succ.facts").write_text("edited by hand\n")
    result = train(PRED, "-D", str(out))
    assert_clean_exit(result)
    assert "changed since nlndl wrote it" in result.output
    assert (out / "pred.main.facts" / "succ.facts").read_text() == "edited by hand\n"


def test_train_does_not_follow_a_symlink_out_of_the_output_directory(tmp_path):
    out = tmp_path / "O"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / "pred.main.facts.lp").symlink_to("../victim.txt")
    result = train(PRED, "-D", str(out))
    assert_clean_exit(result)
    assert "symbolic link" in result.output
    assert victim.read_text() == "precious\n"
    assert not (out / "pred.dl").exists()


def test_a_solved_run_removes_only_the_checkpoint_files_it_wrote(tmp_path):
    out = tmp_path / "O"
    assert train(LT, "-D", str(out), "--max-iters", "5").exit_code == 1
    assert (out / "lt.checkpoint" / "checkpoint.json").is_file()
    (out / "lt.checkpoint" / "notes.txt").write_text("mine\n")
    result = train(LT, "-D", str(out), "--resume")
    assert result.exit_code == 0, result.output
    assert (out / "lt.checkpoint" / "notes.txt").read_text() == "mine\n"
    assert not (out / "lt.checkpoint" / "checkpoint.json").exists()
    assert train(PRED, "-D", str(out)).exit_code == 0
    assert not (tmp_path / "O" / "pred.checkpoint").exists(), "an emptied checkpoint directory goes"


def test_a_file_where_a_directory_goes_is_refused_before_training(tmp_path):
    out = tmp_path / "O"
    out.mkdir()
    (out / "pred.main.facts").write_text("a file\n")
    result = train(PRED, "-D", str(out))
    assert_clean_exit(result)
    assert "pred.main.facts: error: exists and is not a directory" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["pred.main.facts"]


def test_compile_output_never_replaces_a_users_program(tmp_path):
    user = tmp_path / "U"
    user.mkdir()
    (user / "program.json").write_text("user\n")
    (user / "thesis.tex").write_text("keep me\n")
    link = tmp_path / "L"
    link.symlink_to(user)
    for target in (user, link):
        result = runner.invoke(app, ["compile", PRED, "-o", str(target)])
        assert_clean_exit(result)
        assert "was not written by nlndl" in result.output
    assert snapshot(user) == {"program.json": b"user\n", "thesis.tex": b"keep me\n"}
    fresh = tmp_path / "D"
    (fresh / "sub").mkdir(parents=True)
    assert runner.invoke(app, ["compile", PRED, "-o", str(fresh)]).exit_code == 0
    assert runner.invoke(app, ["compile", PRED, "-o", str(fresh)]).exit_code == 0, "its own program is replaced"
    assert CompiledProgram.load(fresh).learned.keys() == {"pred"}
    assert (fresh / "sub").is_dir()


def test_a_full_disk_leaves_the_earlier_output_whole(tmp_path, monkeypatch):
    out = tmp_path / "O"
    assert train(PRED, "-D", str(out)).exit_code == 0
    before = snapshot(out)
    import nlndl.jobs.ilp

    def half_then_full(staging, *args, **kwargs):
        (staging / "pred.dl").write_text("half a fi")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(nlndl.jobs.ilp, "write_program", half_then_full)
    result = train(PRED, "-D", str(out))
    assert_clean_exit(result)
    assert "No space left on device" in result.output and "pred(A, B) :- succ(B, A)." in result.output
    assert snapshot(out) == before, "the earlier files are whole and unchanged; no staging left behind"


def test_ctrl_c_on_a_full_disk_leaves_no_empty_checkpoint(tmp_path, monkeypatch):
    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    def full(self, path):
        path.mkdir(parents=True, exist_ok=True)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Trainer, "fit", interrupted)
    monkeypatch.setattr(Trainer, "save", full)
    out = tmp_path / "O"
    result = train(LT, "-D", str(out))
    assert_clean_exit(result)
    assert "checkpoint could not be saved" in result.output
    assert not (out / "lt.checkpoint").exists()
    assert [p.name for p in out.iterdir() if p.name != MANIFEST] == []


def test_output_dir_publishes_all_or_nothing(tmp_path):
    def writes(staging: Path) -> None:
        (staging / "b").mkdir()
        (staging / "a.txt").write_bytes(b"1")
        (staging / "b" / "c.txt").write_bytes(b"2")

    OutputDir(tmp_path / "D").publish(writes)
    manifest = (tmp_path / "D" / MANIFEST).read_bytes()
    assert snapshot(tmp_path / "D") == {"a.txt": b"1", "b/c.txt": b"2", MANIFEST: manifest}

    def fails(staging: Path) -> None:
        (staging / "a.txt").write_bytes(b"new")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputError, match="No space left"):
        OutputDir(tmp_path / "D").publish(fails)
    assert (tmp_path / "D" / "a.txt").read_bytes() == b"1"
    assert not [p for p in (tmp_path / "D").iterdir() if p.name.startswith(".nlndl-staging")]
    (tmp_path / "D" / MANIFEST).write_text("{not json")
    with pytest.raises(OutputError, match="unreadable nlndl manifest"):
        OutputDir(tmp_path / "D")


# --- located errors, never a traceback ---


SKETCH_ERRORS = [
    ('.decl p(x: symbol)\np("\\x").\n', "s.dl:2:3: error: unsupported escape \\x"),
    ('.decl p(x: symbol)\np("\\u12").\n', "s.dl:2:3: error: unsupported escape \\u"),
    (".decl p(x: symbol)\np(_).\n", "s.dl:2:3: error: '_' in a fact"),
    (".decl e(x: symbol)\n.decl g(x: symbol)\ng(a).\ne(_) :- g(X).\n", "s.dl:4:3: error: '_' in a rule head"),
    (".decl p(x: number)\np(" + "9" * 5000 + ").\n", "s.dl:2:3: error: number 999"),
    (".decl p(x: number)\n.learn p(vars=" + "9" * 5000 + ")\n", "s.dl:2:15: error: number 999"),
    (".decl p(x: number)\n.learn p(vars=99999999999999999999)\n", "s.dl:2:15: error: number 99999999999999999999"),
    (".steps " + "1" * 4400 + "\n", "s.dl:1:8: error: number 111"),
    (".decl p(x: number)\n.learn p\n.steps 1000000000\n.pos p(1).\n", "s.dl:3:1: error: .steps must be at most"),
    (".decl p(x: number)\n.learn p(vars=1000)\n.pos p(1).\n", "s.dl:2:10: error: 'vars' must be an integer from 1 to"),
    (".decl p(x: number)\n.learn p(terms=100000000)\n.pos p(1).\n", "'terms' must be an integer from 1 to 4,096"),
]


@pytest.mark.parametrize(("text", "message"), SKETCH_ERRORS)
def test_bad_sketch_gets_a_located_error(monkeypatch, tmp_path, text, message):
    sketch = tmp_path / "s.dl"
    sketch.write_text(text)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["compile", "s.dl"])
    assert_clean_exit(result)
    assert message in result.output, result.output
    assert len(result.output) < 2000, "a long source line is shown around the column only"


def test_non_utf8_sketch_and_facts_are_located(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    Path("s.dl").write_bytes(b".decl p(x: symbol)\np(\xff).\n")
    result = runner.invoke(app, ["compile", "s.dl"])
    assert_clean_exit(result)
    assert "s.dl:2:3: error: sketch is not UTF-8 text (byte 0xff)" in result.output
    Path("s.dl").write_text(FACTS_SKETCH)
    Path("r.facts").write_bytes(b"a\t1\nb\t\xfe\n")
    result = runner.invoke(app, ["compile", "s.dl", "-F", "."])
    assert_clean_exit(result)
    assert "r.facts:2:3: error: not UTF-8 text (byte 0xfe)" in result.output


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("a\t", "r.facts:1:3: error: empty field"),
        ("a\t 3", "r.facts:1:3: error: expected a number"),
        ("a\t1_000", "r.facts:1:3: error: expected a number"),
        ("a\t\u0663", "r.facts:1:3: error: expected a number"),
        ("a\t" + "9" * 26, "r.facts:1:3: error: expected a number in -2147483648..2147483647"),
        ("a\tb\tc", "r.facts:1:1: error: expected 2 tab-separated fields, got 3"),
        ("a\x01b\t1", "r.facts:1:1: error: control character in symbol 'a\\x01b'"),
        ("a\rb\t1", "r.facts:1:1: error: control character in symbol 'a\\rb'"),
        ("b\t1\r\na\x7f\t2\r", "r.facts:2:1: error: control character in symbol 'a\\x7f'"),
    ],
)
def test_facts_fields_are_read_as_souffle_reads_them(monkeypatch, tmp_path, row, message):
    monkeypatch.chdir(tmp_path)
    Path("s.dl").write_text(FACTS_SKETCH)
    Path("r.facts").write_text(row + "\n")
    result = runner.invoke(app, ["compile", "s.dl", "-F", "."])
    assert_clean_exit(result)
    assert message in result.output, result.output


def test_facts_in_range_are_accepted(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    Path("s.dl").write_text(FACTS_SKETCH)
    Path("r.facts").write_text("a\t-2147483648\nb\t2147483647\nc\t007\r\n")
    result = runner.invoke(app, ["compile", "s.dl", "-F", "."])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("value", ["inf", "1e400", "infGiB", "1e-9", "\uff12GiB", "nan", "-1MiB", "2XB", ""])
def test_bad_memory_limit_is_a_usage_error(value):
    result = runner.invoke(app, ["compile", PRED, "--memory-limit", value])
    assert_clean_exit(result, 2)
    assert "--memory-limit" in result.output
    with pytest.raises(ValueError):
        parse_size(value)


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ("lt(A, B) :- succ(A, C).", "r.dl:1:7: error: variable B in the head is not bound"),
        ("lt(A, B) :- succ(A, B), !succ(B, D).", "r.dl:1:34: error: variable D in the negated atom is not bound"),
        ("lt(A, B) :- succ(A, B, C).", "r.dl:1:13: error: mismatching arity of relation succ (expected 2, got 3)"),
        (".learn lt\nlt(A, B) :- succ(A, B).", "r.dl:1:8: error: .learn in a rules file"),
        ("succ(1, 2).", "r.dl:1:1: error: a fact in a rules file"),
        ("succ(A, B) :- succ(B, A).", "r.dl:1:1: error: rule for succ, which the sketch does not learn"),
        ("lt(A, x) :- succ(A, B).", "r.dl:1:7: error: argument 2 of lt is a number"),
    ],
)
def test_check_locates_rules_that_cannot_run(monkeypatch, tmp_path, rules, message):
    monkeypatch.chdir(tmp_path)
    Path("r.dl").write_text(rules + "\n")
    result = runner.invoke(app, ["check", "r.dl", LT])
    assert_clean_exit(result)
    assert message in result.output, result.output


def _corrupt(checkpoint: Path, how: str) -> None:
    from safetensors.torch import load_file, save_file

    json_file, tensors_file = checkpoint / "checkpoint.json", checkpoint / "checkpoint.safetensors"
    if how == "truncated json":
        json_file.write_text(json_file.read_text()[:50])
    elif how == "json of the wrong shape":
        json_file.write_text("[1, 2]")
    elif how == "wrong types":
        json_file.write_text('{"state": {"iteration": "x"}}')
    elif how == "unknown state key":
        json_file.write_text('{"state": {"iteration": 3, "bogus": 1}}')
    elif how == "truncated safetensors":
        tensors_file.write_bytes(tensors_file.read_bytes()[:500])
    elif how == "garbage safetensors":
        tensors_file.write_bytes(b"garbage")
    elif how == "missing safetensors":
        tensors_file.unlink()
    elif how in ("missing key", "extra key"):
        tensors = load_file(str(tensors_file))
        if how == "missing key":
            del tensors["restart_best"]
        else:
            tensors["extra"] = tensors["generator"].clone()
        save_file(tensors, str(tensors_file))


@pytest.mark.parametrize(
    "how",
    [
        "truncated json",
        "json of the wrong shape",
        "wrong types",
        "unknown state key",
        "truncated safetensors",
        "garbage safetensors",
        "missing safetensors",
        "missing key",
        "extra key",
        "restarts changed",
    ],
)
def test_resume_from_a_damaged_checkpoint_is_refused_and_leaves_it(tmp_path, how):
    out = tmp_path / "O"
    assert train(LT, "-D", str(out), "--max-iters", "5").exit_code == 1
    checkpoint = out / "lt.checkpoint"
    _corrupt(checkpoint, how)
    before = snapshot(checkpoint)
    extra = ["--restarts", "8"] if how == "restarts changed" else []
    result = train(LT, "-D", str(out), "--resume", "--max-iters", "10", *extra)
    assert_clean_exit(result)
    assert f"{checkpoint}: error: checkpoint is unusable: " in result.output
    assert snapshot(checkpoint) == before


def test_loading_a_damaged_program_is_a_value_error(tmp_path):
    assert runner.invoke(app, ["compile", PRED, "-o", str(tmp_path / "P")]).exit_code == 0
    (tmp_path / "P" / "arrays.safetensors").write_bytes(b"\x00" * 9)
    with pytest.raises(ValueError, match="not a compiled nlndl program"):
        CompiledProgram.load(tmp_path / "P")


# --- runaways refused up front, with the estimate ---


def test_huge_grids_and_valuations_are_refused_with_the_count(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    constants = "".join(f"c(k{i}).\n" for i in range(300))
    Path("s.dl").write_text(
        f".decl c(x: symbol)\n{constants}.decl p(x: symbol, y: symbol)\n.learn p(vars=8, prune=none)\n.pos p(k1, k2).\n"
    )
    result = runner.invoke(app, ["compile", "s.dl", "--subgraph", "none"])
    assert_clean_exit(result)
    assert "p has 65,610,000,000,000,000,000 substitutions" in result.output
    result = runner.invoke(app, ["compile", "s.dl"])  # --subgraph auto: a subgraph instead of a refusal
    assert result.exit_code == 0 and "of 300 constants" in result.output
    Path("s.dl").write_text(
        f".decl c(x: symbol)\n{constants}.decl r(a: symbol, b: symbol, c: symbol, d: symbol, e: symbol)\n"
        ".decl p(x: symbol, y: symbol)\n.learn p\n.pos p(k1, k2).\n"
    )
    result = runner.invoke(app, ["compile", "s.dl", "--layout", "dense", "--subgraph", "none"])
    assert_clean_exit(result)
    assert "would hold 2,430,000,090,301 ground atoms" in result.output and "--memory-limit" in result.output
    result = runner.invoke(app, ["compile", "s.dl", "--subgraph", "none"])  # sparse: few facts, many substitutions
    assert_clean_exit(result)
    assert "would hold 26,640,306 candidate bindings" in result.output and "--memory-limit" in result.output


def test_too_many_candidate_atoms_are_refused_before_enumeration(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    Path("s.dl").write_text(
        ".decl e(a: symbol, b: symbol, c: symbol, d: symbol)\ne(a, b, c, d).\n"
        ".decl p(x: symbol, y: symbol)\n.learn p(vars=32)\n.pos p(a, b).\n"
    )
    result = runner.invoke(app, ["compile", "s.dl"])
    assert_clean_exit(result)
    assert "p would have 1,049,600 candidate body atoms (at most 20,000)" in result.output


def test_train_fits_its_memory_limit_or_refuses_with_the_estimate(tmp_path):
    # less-than: about 78 MiB with 32 restarts, 67 MiB with each step recomputed in the backward pass
    result = runner.invoke(app, ["train", LT, "-D", str(tmp_path / "A"), "--memory-limit", "70MiB"])
    assert result.exit_code == 0, result.output
    assert "steps recomputed in the backward pass" in result.output and "32 restarts" in result.output
    result = runner.invoke(app, ["train", LT, "-D", str(tmp_path / "B"), "--memory-limit", "66MiB"])
    assert result.exit_code == 0, result.output
    assert "20 restarts instead of 32" in result.output
    result = train(LT, "-D", str(tmp_path / "C"), "--memory-limit", "66MiB", "--restarts", "32")
    assert_clean_exit(result)
    assert "training would need about 78.1 MiB (32 restarts, 10 steps; 67.1 MiB with each step recomputed" in (
        result.output
    )
    assert "use --restarts 20" in result.output and "--memory-limit" in result.output
    assert not (tmp_path / "C").exists()


def test_check_refuses_a_rules_file_too_large_to_parse(tmp_path):
    rules = tmp_path / "r.dl"
    rules.write_text("lt(A, B) :- succ(A, B).\n" * 2000)
    result = runner.invoke(app, ["check", str(rules), LT, "--memory-limit", "1MiB"])
    assert_clean_exit(result)
    assert "would take about" in result.output and "to parse" in result.output


def test_a_fifo_is_not_read(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    os.mkfifo("r.facts")
    Path("s.dl").write_text(".decl r(x: symbol)\n.input r\n.decl q(x: symbol)\n.learn q(vars=1)\n.pos q(a).\n")
    result = runner.invoke(app, ["compile", "s.dl", "-F", "."])
    assert_clean_exit(result)
    assert "not a regular file" in result.output


# --- interrupts ---


def test_ctrl_c_saves_a_checkpoint_and_resume_finishes_the_run(tmp_path, monkeypatch):
    straight = train(LT, "-D", str(tmp_path / "A"), "--json")
    assert straight.exit_code == 0
    real = Trainer.step

    def interrupted_at_30(self):
        if self.state.iteration == 30:
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(Trainer, "step", interrupted_at_30)
    out = tmp_path / "B"
    result = train(LT, "-D", str(out))
    assert result.exit_code == 130 and "continue with --resume" in result.output
    assert json.loads((out / "lt.checkpoint" / "checkpoint.json").read_text())["state"]["iteration"] == 30
    assert not (out / "lt.dl").exists(), "an interrupted run writes no results"
    monkeypatch.setattr(Trainer, "step", real)
    resumed = train(LT, "-D", str(out), "--resume", "--json")
    assert resumed.exit_code == 0, resumed.output
    keys = ("iterations", "rules")
    assert {k: json.loads(resumed.output)[k] for k in keys} == {k: json.loads(straight.output)[k] for k in keys}


def test_sigkill_leaves_only_whole_files(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "O"
    args = [sys.executable, "-m", "nlndl", "train", LT, "-D", str(out), "-q", "--max-iters", "100000"]
    for delay in (0.5, 3.0):
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        manifest = json.loads((out / MANIFEST).read_text()) if (out / MANIFEST).exists() else {"files": {}}
        import hashlib

        for path in out.rglob("*") if out.exists() else ():
            if path.is_file() and ".nlndl-staging-" not in str(path) and path.name != MANIFEST:
                rel = path.relative_to(out).as_posix()
                assert hashlib.sha256(path.read_bytes()).hexdigest() == manifest["files"][rel], rel
    result = train(PRED, "-D", str(out))
    assert result.exit_code == 0, result.output
    assert not list(out.glob(".nlndl-staging-*")), "a killed run's staging is removed by the next"


def test_time_limit_stops_a_long_forward_pass_between_steps(tmp_path):
    # a limit of 0 s stops the first training pass at its first step: no iteration completes
    args = ["train", LT, "-D", str(tmp_path / "O"), "--steps", "5000", "--time-limit", "0", "--json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert json.loads(result.output)["iterations"] == 0


def test_ldpc_work_too_large_is_refused_with_the_estimate(tmp_path):
    result = runner.invoke(app, ["ldpc", "compile", "--generate", "100000000,3,6"])
    assert_clean_exit(result, 2)
    assert "a code of length 100,000,000 with 50,000,000 checks needs about" in result.output
    alist = tmp_path / "big.alist"
    alist.write_text("100000 50000\n3 6\n")
    result = runner.invoke(app, ["ldpc", "compile", "--matrix", str(alist)])
    assert_clean_exit(result)
    assert f"{alist}:1:1: error: a code of length 100,000" in result.output
    result = runner.invoke(app, ["ldpc", "train", "-o", str(tmp_path / "D"), "--batch", "100000000", "-q"])
    assert_clean_exit(result)
    assert "a training step on 100,000,000 words with 3 iterations needs about" in result.output
    assert not (tmp_path / "D").exists()


def test_share_cpu_leaves_a_chosen_policy_and_a_loaded_torch_alone(monkeypatch):
    from nlndl.allocator import others_running, share_cpu

    assert others_running(samples=2, interval=0.0) >= 0
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    assert share_cpu() is None, "torch is already imported here: too late to choose"
    assert "OMP_WAIT_POLICY" not in os.environ


def test_the_load_is_looked_at_until_a_look_sees_no_other_task(monkeypatch):
    """others_running returns the fewest runnable tasks seen: a look that sees none ends the looking."""
    import io

    from nlndl import allocator

    looks = []

    def loadavg(running: int):
        def fake_open(path, *args, **kwargs):
            looks.append(path)
            return io.StringIO(f"0.50 0.40 0.30 {running}/300 4242\n")

        return fake_open

    monkeypatch.setattr(allocator, "open", loadavg(1), raising=False)  # this process alone
    assert allocator.others_running(samples=5, interval=0.0) == 0 and len(looks) == 1
    looks.clear()
    monkeypatch.setattr(allocator, "open", loadavg(3), raising=False)
    assert allocator.others_running(samples=5, interval=0.0) == 2 and len(looks) == 5


def test_the_console_script_collects_cycles_less_often_and_exits_without_teardown(tmp_path):
    """main() owns its process: higher collector thresholds from the start; at the end its exit handlers run,
    what it printed is flushed and its exit code kept, and nothing after main() runs (no teardown)."""
    code = (
        "import atexit, gc, sys\n"
        "from nlndl.allocator import GC_THRESHOLDS\n"
        "from nlndl.cli import main\n"
        "atexit.register(lambda: print('handler', gc.get_threshold() == GC_THRESHOLDS))\n"
        "sys.argv = ['nlndl', *sys.argv[1:]]\n"
        "main()\n"
        "print('after main')\n"
    )
    done = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.split() == ["nlndl", __version__, "handler", "True"], done
    bad = tmp_path / "bad.dl"
    bad.write_text("foo(\n")
    failed = subprocess.run([sys.executable, "-c", code, "compile", str(bad)], capture_output=True, text=True)
    assert failed.returncode == 1 and failed.stdout.split() == ["handler", "True"], failed
    assert f"{bad}:1:5: error:" in failed.stderr, failed


def test_step_and_restart_options_are_bounded(tmp_path):
    from nlndl.defaults import MAX_STEPS

    assert_clean_exit(runner.invoke(app, ["compile", LT, "--steps", str(MAX_STEPS + 1)]), 2)
    result = train(LT, "-D", str(tmp_path / "O"), "--restarts", "1000000000")
    assert_clean_exit(result)
    assert "1000000000 restarts" in result.output and "use --restarts " in result.output


def test_a_plot_of_unknown_format_is_refused_before_the_run(tmp_path):
    for command in (["bench", "boolean", "--quick"], ["bench", "ldpc", "--quick"]):
        result = runner.invoke(app, [*command, "--plot", str(tmp_path / "curves.foo")])
        assert_clean_exit(result)
        assert "a plot is written as .png, .svg, .pdf" in result.output


def test_a_facts_file_too_large_to_read_is_refused_before_reading(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    Path("s.dl").write_text(FACTS_SKETCH)
    Path("r.facts").write_text("a\t1\n" * 10_000)
    result = runner.invoke(app, ["compile", "s.dl", "-F", ".", "--memory-limit", "1MiB"])
    assert_clean_exit(result)
    assert "s.dl:2:8: error: facts file r.facts of 39.1 KiB would take about 2.4 MiB to read" in result.output


def test_every_error_the_user_can_act_on_shares_one_base():
    """The CLI maps NlndlError to its message and exit 1; each layer's user-facing error derives from it."""
    from nlndl.compiler.diagnostics import CompileError
    from nlndl.errors import JobError, NlndlError
    from nlndl.output import OutputError
    from nlndl.runtime.budget import BudgetError
    from nlndl.runtime.train import CheckpointError

    for error in (CompileError, JobError, OutputError, BudgetError, CheckpointError):
        assert issubclass(error, NlndlError), error
