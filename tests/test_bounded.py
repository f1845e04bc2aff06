"""Checks with a ceiling: a call bounded in time and memory is stopped there, its child process gone, and a
whole-world check past its ceiling scores rules as not checked, never as solved."""

import os
import signal
import time
from pathlib import Path

import pytest

from nlndl import learn
from nlndl.allowance import Allowance
from nlndl.bench.scale import forest
from nlndl.bounded import Unfinished, bounded, forks
from nlndl.compiler import compile_sketch
from nlndl.compiler.crisp import BodyAtom, Rule
from nlndl.engines import EngineError
from nlndl.learn import LearnConfig, Learner

pytestmark = pytest.mark.skipif(not forks(), reason="bounded calls fork and read /proc (Linux)")


def no_child_left() -> bool:
    """Whether this process has no child, running or unreaped."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_a_call_returns_its_value_or_raises_its_exception():
    assert bounded(lambda: {(i, (i, i + 1)) for i in range(50_000)}, 30.0, 2**30) == {
        (i, (i, i + 1)) for i in range(50_000)
    }
    with pytest.raises(EngineError, match="no model"):
        bounded(lambda: (_ for _ in ()).throw(EngineError("no model")), 30.0, None)
    assert no_child_left()


def test_a_call_past_its_seconds_is_stopped():
    with pytest.raises(Unfinished, match=r"stopped after \d+ s"):
        bounded(lambda: time.sleep(60), 0.3, None)
    assert no_child_left()


def test_a_call_past_its_memory_is_stopped():
    def hoard() -> int:
        held = []
        for _ in range(200):  # 2 GB in 10 MB steps, touched
            held.append(bytearray(10**7))
            time.sleep(0.005)
        return len(held)

    with pytest.raises(Unfinished, match=r"stopped at .* past 100.0 MiB"):
        bounded(hoard, None, 100 * 2**20)
    assert no_child_left()


def test_an_interrupt_while_waiting_stops_the_child():
    class Alarm(Exception):
        pass

    def ring(signum, frame):
        raise Alarm()

    previous = signal.signal(signal.SIGALRM, ring)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(Alarm):
            bounded(lambda: time.sleep(60), 120.0, None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert no_child_left()


def atom(p: str, a: str, b: str) -> BodyAtom:
    return BodyAtom(p, (("v", a), ("v", b)))


def rule(*body: BodyAtom) -> Rule:
    return Rule("ancestor", (("v", "A"), ("v", "B")), body)


def test_a_whole_world_check_past_its_ceiling_is_not_checked_and_not_solved(tmp_path: Path, monkeypatch):
    sketch, facts, _ = forest(200, seed=0)
    (tmp_path / "sketch.dl").write_text(sketch)
    (tmp_path / "parent.facts").write_text(facts)
    program = compile_sketch(tmp_path / "sketch.dl", subgraph=30, seed=0)
    assert program.whole
    right = [rule(atom("parent", "A", "B")), rule(atom("ancestor", "A", "C"), atom("parent", "C", "B"))]
    # right on a subgraph of a tree's few people, and every pair of the whole tree: 200^3 ground instances
    everything = [
        rule(atom("parent", "A", "B")),
        rule(atom("ancestor", "B", "A")),
        rule(atom("ancestor", "A", "C"), atom("ancestor", "C", "B")),
    ]
    learner = Learner(program, LearnConfig(memory_limit=None))
    monkeypatch.setattr(learn, "CHECK_SECONDS", 600.0)
    assert learner.whole_score(right).solved
    # each ceiling below is CHECK_SECONDS alone (training "started" just now), however slow the machine
    monkeypatch.setattr(learn, "CHECK_SECONDS", 0.2)
    learner.started = time.perf_counter()
    score = learner.whole_score(everything)
    assert score.unchecked is not None and not score.solved
    assert not Allowance.of_counts({True: 10, False: 10}, 0.5).admits(score)  # nor within any noise allowance
    assert score.quality().startswith("not checked on the whole world: clingo's check stopped after")
    assert no_child_left()
    monkeypatch.setattr(learn, "CHECK_SECONDS", 0.3)  # asked again before its allowance has doubled: as it was
    learner.started = time.perf_counter()
    assert learner.whole_score(everything) is score
    monkeypatch.setattr(learn, "CHECK_SECONDS", 600.0)  # once it has: checked again, to clingo's verdict
    done = learner.whole_score(everything)
    assert done.unchecked is None and done.false_positives > 0 and not done.solved


def test_sigterm_stops_nlndl_check_while_clingo_grounds(tmp_path: Path):
    """nlndl check of rules whose grounding takes minutes (every pair of a 700-person tree, 700^3 ground
    instances): SIGTERM ends it at once with exit 143 and a word on stderr, its clingo process gone."""
    import subprocess
    import sys

    sketch, facts, _ = forest(700, seed=0)
    (tmp_path / "sketch.dl").write_text(sketch)
    (tmp_path / "parent.facts").write_text(facts)
    (tmp_path / "rules.dl").write_text(
        "ancestor(A, B) :- parent(A, B).\nancestor(A, B) :- ancestor(B, A).\n"
        "ancestor(A, C) :- ancestor(A, B), ancestor(B, C).\n"
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "nlndl", "check", "rules.dl", "sketch.dl"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(6)  # compiled, and clingo grounding in its child process
        run.send_signal(signal.SIGTERM)
        out, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 143 and "interrupted" in err, (run.returncode, out[-500:], err[-500:])
    assert "entailed" not in out  # stopped, not finished
    assert not [pid for pid in Path("/proc").iterdir() if pid.name.isdigit() and cwd(pid) == tmp_path.resolve()]


def cwd(pid: Path) -> Path | None:
    """A process's working directory; None where it cannot be read (gone, or not ours)."""
    try:
        return (pid / "cwd").resolve(strict=True)
    except OSError:
        return None


def test_nlndl_check_stops_at_its_time_limit(tmp_path: Path):
    """nlndl check --time-limit of rules whose grounding takes minutes: a located error and exit 1 soon after the
    limit, no result printed; the same rules on a small tree are checked within it."""
    import subprocess
    import sys

    rules = (
        "ancestor(A, B) :- parent(A, B).\nancestor(A, B) :- ancestor(B, A).\n"
        "ancestor(A, C) :- ancestor(A, B), ancestor(B, C).\n"
    )
    for people, limit in ((700, "3"), (30, "60")):
        sketch, facts, _ = forest(people, seed=0)
        (tmp_path / "sketch.dl").write_text(sketch)
        (tmp_path / "parent.facts").write_text(facts)
        (tmp_path / "rules.dl").write_text(rules)
        run = subprocess.run(
            [sys.executable, "-m", "nlndl", "check", "rules.dl", "sketch.dl", "--time-limit", limit],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if people == 700:
            assert run.returncode == 1, (run.stdout[-500:], run.stderr[-500:])
            assert "rules.dl: error: clingo's check stopped after" in run.stderr and "(--time-limit)" in run.stderr
            assert "entailed" not in run.stdout
        else:
            assert "entailed" in run.stdout and "error" not in run.stderr, run.stderr[-500:]
