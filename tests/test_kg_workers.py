"""Relations learned by worker processes (nlndl.workers): the same clauses, confidences and iterations as one
after another in one process, every relation reported once started and once done, a worker's error raised."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlndl.errors import JobError
from nlndl.kg_rules import Graph, KGConfig, learn_graph
from nlndl.workers import worker_count


def relatives(directory: Path) -> Path:
    """aunt, uncle and grandparent over eight families, in the standard layout."""
    train, test = [], []
    for f in range(8):
        mother, sister, brother, gran, kids = f"m{f}", f"s{f}", f"b{f}", f"g{f}", [f"k{f}a", f"k{f}b"]
        train += [f"{mother}\tsibling\t{sister}", f"{mother}\tsibling\t{brother}", f"{gran}\tparent\t{mother}"]
        train += [f"{mother}\tparent\t{k}" for k in kids]
        rows = [f"{sister}\taunt\t{k}" for k in kids] + [f"{brother}\tuncle\t{k}" for k in kids]
        rows += [f"{gran}\tgrandparent\t{k}" for k in kids]
        (train if f < 6 else test).extend(rows)
    directory.mkdir(parents=True)
    (directory / "train.txt").write_text("".join(r + "\n" for r in train))
    (directory / "test.txt").write_text("".join(r + "\n" for r in test))
    (directory / "valid.txt").write_text("")
    return directory


def learned(directory: Path, jobs: int) -> tuple[list[tuple], list[tuple]]:
    graph = Graph.read(directory)
    told: list[tuple] = []
    config = KGConfig(time_limit=600, max_iters=120, pool_patience=None, jobs=jobs)
    relations = ["aunt", "grandparent", "uncle"]
    out = learn_graph(directory, graph, relations, config, lambda i, n, r, one: told.append((r, one is None)))
    rows = [
        (one.relation, one.result.iterations, [(str(r), c) for r, c in one.clauses], [str(r) for r, _ in one.program])
        for one in out
    ]
    return rows, told


def test_workers_learn_what_one_process_learns(tmp_path):
    directory = relatives(tmp_path / "kg")
    alone, told_alone = learned(directory, 1)
    together, told = learned(directory, 2)
    assert together == alone
    assert [row[0] for row in alone] == ["aunt", "grandparent", "uncle"]
    assert any(c for _, _, c, _ in alone), "some clause was found"
    for relation in ("aunt", "grandparent", "uncle"):
        assert told.count((relation, True)) == 1 and told.count((relation, False)) == 1
    assert sorted(told_alone) == sorted(told)


def test_a_workers_error_is_raised_by_the_caller(tmp_path):
    directory = relatives(tmp_path / "kg")
    graph = Graph.read(directory)
    config = KGConfig(time_limit=600, max_iters=20, jobs=2, memory_limit=64)  # too little to read the graph
    with pytest.raises(JobError, match="train.txt"):
        learn_graph(directory, graph, ["aunt", "uncle"], config)


def test_the_worker_count_follows_cores_relations_and_memory():
    assert worker_count(3, 10, 8 * 2**30) == 3
    assert worker_count(4, 2, 8 * 2**30) == 2
    assert worker_count(0, 1, 8 * 2**30) == 1
    assert worker_count(0, 1000, 2**60) == 1, "no machine holds two trainings of 2^60 bytes"


def test_ctrl_c_while_workers_learn_ends_them_and_keeps_what_arrived(tmp_path, monkeypatch):
    import multiprocessing

    import nlndl.workers as workers

    directory = relatives(tmp_path / "kg")
    graph = Graph.read(directory)
    real_wait, seen = workers.wait, []

    def interrupted_once_one_arrived(*args, **kwargs):
        if seen:
            raise KeyboardInterrupt
        done, rest = real_wait(*args, **kwargs)
        seen.extend(done)
        return done, rest

    monkeypatch.setattr(workers, "wait", interrupted_once_one_arrived)
    kept = []
    config = KGConfig(time_limit=600, max_iters=60, pool_patience=None, jobs=2)
    with pytest.raises(KeyboardInterrupt):
        learn_graph(directory, graph, ["aunt", "grandparent", "uncle"], config, keep=kept.append)
    assert 1 <= len(kept) <= 2, "what arrived before Ctrl-C was kept"
    assert not multiprocessing.active_children(), "every worker was ended"


def test_a_worker_that_dies_is_a_located_error(tmp_path, monkeypatch):
    directory = relatives(tmp_path / "kg")
    graph = Graph.read(directory)
    config = KGConfig(time_limit=600, max_iters=20, jobs=2)
    from nlndl import kg_rules as kg

    monkeypatch.setattr(kg, "learn_relation", _die)
    with pytest.raises(JobError, match="worker process learning relation '(aunt|uncle)' ended without a result"):
        learn_graph(directory, graph, ["aunt", "uncle"], config)


def _die(*args, **kwargs):
    import os

    os._exit(9)  # as a worker killed for memory would end


def test_a_users_script_without_a_main_guard_learns_with_workers_that_do_not_run_it_again(tmp_path):
    """Spawned workers do not import the calling script (nlndl.workers.main_left_behind): a script whose calls
    to nlndl stand at its top level, as the README's do, learns with two workers, runs once, and predicts."""
    import subprocess
    import sys

    directory = relatives(tmp_path / "kg")
    ran = tmp_path / "ran.txt"
    script = tmp_path / "mine.py"
    script.write_text(
        "from nlndl import api\n"
        "from nlndl.kg_rules import KGConfig\n"
        f"with open({str(ran)!r}, 'a') as f:\n"
        "    f.write('ran\\n')\n"
        f"kg = api.train_kg({str(directory)!r}, {str(tmp_path / 'out')!r}, relations=['aunt', 'uncle'],\n"
        "                  config=KGConfig(max_iters=40, pool_patience=None, jobs=2))\n"
        "print(sorted(one.relation for one in kg.learned))\n"
        f"answers = api.predict_kg({str(tmp_path / 'out')!r}, 'aunt(?, k0a)', k=2)\n"
        "print(answers[0].entity, {type(c).__name__ for _, c, _ in answers[0].rules})\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "['aunt', 'uncle']" in done.stdout and ran.read_text() == "ran\n"
    assert "s0 {'float'}" in done.stdout, "the explanation's confidences are Python floats, as its type says"
    assert (tmp_path / "out" / "rules.dl").exists()
