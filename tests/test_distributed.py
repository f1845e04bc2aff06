"""torchrun: the relations of `nlndl kg train` shared among 2 gloo processes give the program 1 process gives."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nlndl.distributed import Ranks, gather, share


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
    parts = [share(items, Ranks(r, 2)) for r in range(2)]
    assert parts == [["a", "c", "e"], ["b", "d"]]
    assert share(items, Ranks()) == items and gather(items, Ranks()) == items


def learned(out: Path) -> list[dict]:
    rows = json.loads((out / "rules.json").read_text())["relations"]
    for row in rows:
        del row["seconds"], row["peak_rss_mib"]
    return rows


@pytest.mark.skipif(sys.platform != "linux", reason="torchrun with gloo, as CI runs it")
def test_kg_train_under_torchrun_with_2_processes_learns_what_1_process_learns(tmp_path):
    directory = kin(tmp_path)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = ["kg", "train", str(directory), "--max-iters", "300", "--time-limit", "600", "-q"]
    one = subprocess.run(
        [sys.executable, "-m", "nlndl", *args, "-D", str(tmp_path / "one")], env=env, capture_output=True, text=True
    )
    assert one.returncode == 0, one.stdout + one.stderr
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "nlndl"]
    two = subprocess.run([*launcher, *args, "-D", str(tmp_path / "two")], env=env, capture_output=True, text=True)
    assert two.returncode == 0, two.stdout + two.stderr
    assert [r["relation"] for r in learned(tmp_path / "two")] == ["aunt", "uncle"]
    assert learned(tmp_path / "two") == learned(tmp_path / "one")
    for name in ("rules.dl", "rules.lp", "facts.lp"):
        assert (tmp_path / "two" / name).read_text() == (tmp_path / "one" / name).read_text()
