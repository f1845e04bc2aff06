"""torchrun with 2 gloo processes gives what 1 process gives: one program's training sharded (`nlndl train`: the
same rules, iterations and losses), and the relations of `nlndl kg train` and `nlndl bench kg` shared."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from nlndl.compiler import compile_sketch
from nlndl.compiler.examples import share as share_examples
from nlndl.distributed import gather, share
from nlndl.runtime.collective import Collective

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "nlndl"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def kin(tmp_path: Path) -> Path:
    """Eight families: a mother with two children, her sister and her brother; aunt and uncle in train.txt."""
    facts, train, test = [], [], []
    for f in range(8):
        mother, sister, brother, kids = f"m{f}", f"s{f}", f"b{f}", [f"k{f}a", f"k{f}b"]
        facts += [f"{mother}\tsibling\t{sister}", f"{sister}\tsibling\t{mother}", f"{brother}\tsibling\t{mother}"]
        facts += [f"{mother}\tsibling\t{brother}", f"{sister}\tfemale\t{sister}", f"{mother}\tfemale\t{mother}"]
        facts += [f"{brother}\tmale\t{brother}"] + [f"{mother}\tparent\t{k}" for k in kids]
        rows = train if f < 6 else test
        rows += [f"{sister}\taunt\t{k}" for k in kids] + [f"{brother}\tuncle\t{k}" for k in kids]
    directory = tmp_path / "kin"
    directory.mkdir()
    for name, rows in (("facts", facts), ("train", train), ("test", test)):
        (directory / f"{name}.txt").write_text("".join(r + "\n" for r in rows))
    return directory


def test_share_deals_round_robin_and_gather_restores_the_order():
    items = list("abcde")
    parts = [share(items, SimpleNamespace(rank=r, size=2)) for r in range(2)]
    assert parts == [["a", "c", "e"], ["b", "d"]]
    assert share(items, Collective()) == items and gather(items, Collective()) == items


def alone_and_shared(args: list[str], one: list[str], two: list[str]) -> tuple[subprocess.CompletedProcess, ...]:
    """``nlndl ARGS ONE`` in 1 process and ``ARGS TWO`` under torchrun with 2, run at the same time (their
    results do not depend on the clock; the suite waits for the longer instead of both)."""
    runs = [
        subprocess.Popen(command, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for command in ([sys.executable, "-m", "nlndl", *args, *one], [*LAUNCHER, *args, *two])
    ]
    done = []
    for run in runs:
        stdout, stderr = run.communicate()
        done.append(subprocess.CompletedProcess(run.args, run.returncode, stdout, stderr))
    return tuple(done)


def learned(out: Path) -> list[dict]:
    rows = json.loads((out / "rules.json").read_text())["relations"]
    for row in rows:
        del row["seconds"], row["peak_rss_mib"]
    return rows


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo, as CI runs it")
def test_kg_train_under_torchrun_with_2_processes_learns_what_1_process_learns(tmp_path):
    directory = kin(tmp_path)
    args = ["kg", "train", str(directory), "--max-iters", "300", "--time-limit", "600", "-q"]
    one, two = alone_and_shared(args, ["-D", str(tmp_path / "one")], ["-D", str(tmp_path / "two")])
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout + two.stderr
    assert [r["relation"] for r in learned(tmp_path / "two")] == ["aunt", "uncle"]
    assert learned(tmp_path / "two") == learned(tmp_path / "one")
    for name in ("rules.dl", "rules.lp", "facts.lp"):
        assert (tmp_path / "two" / name).read_text() == (tmp_path / "one" / name).read_text()


def figures(report: dict) -> dict:
    """A bench kg report without its clock and memory readings."""
    if isinstance(report, dict):
        gone = ("seconds", "peak_rss", "peak_rss_mib", "processes", "workers_per_process", "config", "command")
        return {k: figures(v) for k, v in report.items() if k not in gone}
    return [figures(v) for v in report] if isinstance(report, list) else report


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo, as CI runs it")
def test_bench_kg_under_torchrun_with_2_processes_ranks_what_1_process_ranks(tmp_path):
    """Each process learns and ranks its share of the relations; rank 0 reports them in order."""
    directory = kin(tmp_path)
    args = ["bench", "kg", str(directory), "--time-limit", "600", "--jobs", "1", "-q", "--record"]
    one, two = alone_and_shared(args, [str(tmp_path / "one.json")], [str(tmp_path / "two.json")])
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout + two.stderr
    alone, shared = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "two"))
    assert [r["relation"] for r in shared["relations"]] == ["aunt", "uncle"] and shared["processes"] == 2
    assert figures(shared) == figures(alone)


def test_examples_are_shared_class_by_class_and_every_one_once():
    flat = np.arange(10, dtype=np.int64)
    labels = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0], dtype=np.float32)
    parts = [share_examples({"p": (flat, labels)}, rank, 2)["p"] for rank in range(2)]
    assert sorted(np.concatenate([f for f, _ in parts]).tolist()) == flat.tolist()
    assert [int(lab.sum()) for _, lab in parts] == [2, 1]  # positives 0, 3, 7 dealt in turn
    assert [len(f) - int(lab.sum()) for f, lab in parts] == [4, 3]


def aunt_sketch(tmp_path: Path) -> Path:
    """The sketch `nlndl kg sketch` writes for `aunt` of :func:`kin`'s triple file."""
    directory = kin(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "nlndl", "kg", "sketch", str(directory), "--target", "aunt", "-o", str(tmp_path / "s")],
        check=True,
        capture_output=True,
    )
    return tmp_path / "s" / "sketch.dl"


def test_a_shard_compiles_its_examples_and_the_atoms_they_read(tmp_path):
    sketch = aunt_sketch(tmp_path)
    whole = compile_sketch(sketch, layout="sparse")
    shards = [compile_sketch(sketch, layout="sparse", shard=(rank, 2)) for rank in range(2)]
    counts = [int(p.worlds[0].example_slots.size) for p in shards]
    assert sum(counts) == whole.worlds[0].example_slots.size and min(counts) > 0
    for part in shards:  # each shard demands fewer learned atoms than the whole
        assert part.worlds[0].atoms < whole.worlds[0].atoms
    with pytest.raises(ValueError, match="shard 2 of 2"):
        compile_sketch(sketch, shard=(2, 2))


def trained(out: Path, stem: str) -> dict:
    record = json.loads((out / f"{stem}.json").read_text())
    return {k: record[k] for k in ("solved", "iterations", "winning_restart", "rules", "restarts", "accuracy")}


def check_same_training(tmp_path: Path, sketch: Path, stem: str, *options: str) -> None:
    """`nlndl train` alone and under torchrun with 2 processes: the same program, iterations and verdict, every
    check's loss within 1e-5, the same files written (by rank 0 only)."""
    args = ["train", str(sketch), "--json", *options]
    one, two = alone_and_shared(args, ["-D", str(tmp_path / "one")], ["-D", str(tmp_path / "two")])
    assert one.returncode == 0, one.stdout + one.stderr
    assert two.returncode == 0, two.stdout + two.stderr
    assert trained(tmp_path / "two", stem) == trained(tmp_path / "one", stem)
    records = [json.loads((tmp_path / d / f"{stem}.json").read_text()) for d in ("one", "two")]
    assert records[0]["processes"] == 1 and records[1]["processes"] == 2
    losses = [r["losses_at_checks"] for r in records]
    assert len(losses[0]) == len(losses[1])  # none where a peek ended the run before its first check
    assert records[0]["iterations"] > 0
    assert losses[1] == pytest.approx(losses[0], abs=1e-5)
    assert (tmp_path / "two" / f"{stem}.dl").read_text() == (tmp_path / "one" / f"{stem}.dl").read_text()
    assert len(two.stdout.strip().splitlines()) == 1  # one JSON summary: rank 0's


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo, as CI runs it")
def test_train_sharded_over_2_processes_learns_what_1_process_learns_on_a_bundled_task(tmp_path):
    """Through `nlndl bench shard`, which runs `nlndl train` alone and under torchrun side by side."""
    sketch = ROOT / "examples/ilp/less_than/sketch.dl"
    report_path = tmp_path / "shard.json"
    bench = [sys.executable, "-m", "nlndl", "bench", "shard", str(sketch), "--max-iters", "400", "--json"]
    done = subprocess.run([*bench, str(report_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_path.read_text())
    one, two = report["rows"]
    assert (one["processes"], two["processes"]) == (1, 2)
    assert one["solved"] and one["rules"]  # less_than is solved within 400 iterations
    for key in ("solved", "rules", "iterations", "restarts", "winning_restart", "losses_at_checks"):
        assert key in one
        if key != "losses_at_checks":
            assert two[key] == one[key], key
    assert two["losses_at_checks"] == pytest.approx(one["losses_at_checks"], abs=1e-5)
    assert report["same_rules"] and report["largest_loss_difference"] <= 1e-5
    assert "same rules: yes" in done.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo, as CI runs it")
def test_train_sharded_over_2_processes_learns_what_1_process_learns_on_a_triple_file(tmp_path):
    check_same_training(tmp_path, aunt_sketch(tmp_path), "aunt", "--layout", "sparse")


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo, as CI runs it")
def test_a_process_whose_share_holds_no_example_still_trains_in_step(tmp_path):
    sketch = tmp_path / "next.dl"  # one positive and one negative: process 1 of 2 holds neither
    sketch.write_text(
        ".type Num <: number\n.decl succ(x: Num, y: Num)\n.decl next(x: Num, y: Num)\n"
        "succ(0,1). succ(1,2). succ(2,3).\n.learn next(vars=2, terms=2)\n.pos next(1,2).\n.neg next(2,1).\n"
    )
    assert compile_sketch(sketch, shard=(1, 2)).worlds[0].example_slots.size == 0
    check_same_training(tmp_path, sketch, "next")
