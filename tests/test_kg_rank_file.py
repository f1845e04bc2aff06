"""``nlndl kg predict --queries FILE --ranking PATH``: every triple of a file asked both ways by the rules kg train
wrote, its answers in AnyBURL's ranking format, ranked as bench kg ranks; bad input is located and writes
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from nlndl.cli import app

runner = CliRunner()
QUICK = ["--max-iters", "60", "--time-limit", "5"]


def graph(directory: Path, seed: int = 0) -> Path:
    """A graph where ``r`` mostly follows ``p`` then ``q`` (and sometimes holds at random), with train, valid and
    test in the standard layout: enough rules and ties that a ranking can go wrong."""
    rng = np.random.default_rng(seed)
    people = [f"e{i}" for i in range(40)]
    p = {(a, people[int(j)]) for a in people for j in rng.choice(40, 2, replace=False)}
    q = {(a, people[int(j)]) for a in people for j in rng.choice(40, 1)}
    r = {(a, c) for a, b in p for b2, c in q if b == b2 and a != c and rng.random() < 0.7}
    r |= {(people[int(i)], people[int(j)]) for i, j in rng.integers(0, 40, (15, 2)) if i != j}
    held = sorted(r)
    order = rng.permutation(len(held))
    test = [held[i] for i in order[:12]]
    valid = [held[i] for i in order[12:18]]
    train = [("p", *x) for x in sorted(p)] + [("q", *x) for x in sorted(q)]
    train += [("r", *held[i]) for i in order[18:]]
    directory.mkdir()
    for name, rows in (("train", train), ("valid", [("r", *x) for x in valid]), ("test", [("r", *x) for x in test])):
        (directory / f"{name}.txt").write_text("".join(f"{h}\t{rel}\t{t}\n" for rel, h, t in rows))
    return directory


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    """(the graph, what kg train -D wrote for its relations r and q)."""
    base = tmp_path_factory.mktemp("rank")
    directory, out = graph(base / "kg"), base / "out"
    relations = ["--relation", "r", "--relation", "q"]
    result = runner.invoke(app, ["kg", "train", str(directory), "-D", str(out), *relations, *QUICK, "-q"])
    assert result.exit_code == 0, result.output
    return directory, out


def ranked(out: Path, queries: Path, to: Path, *more: str) -> dict:
    result = runner.invoke(
        app, ["kg", "predict", str(out), "--queries", str(queries), "--ranking", str(to), "--json", *more]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_counted_rules_alone_rank_a_file_as_bench_kg_ranks_its_split(trained, tmp_path):
    """With no learned clause, the file's MRR and Hits are bench kg's counted rules by top-aggregation
    (``counted_top``), computed there by another path through the code, to the last digit."""
    directory, out = trained
    record = json.loads((out / "rules.json").read_text())
    for one in record["relations"]:
        one["clauses"] = []
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "rules.json").write_text(json.dumps({**record, "data": str(directory.resolve())}))
    got = ranked(bare, directory / "test.txt", tmp_path / "ranks.txt")
    report = tmp_path / "bench.json"
    args = ["bench", "kg", str(directory), "--relation", "r", "--baseline-only", "--record", str(report), "-q"]
    assert runner.invoke(app, args).exit_code == 0
    counted = json.loads(report.read_text())["counted_top"]
    assert counted["queries"] == got["queries"] == 24
    for key in ("mrr", "hits@1", "hits@3", "hits@10"):
        assert got[key] == pytest.approx(counted[key], abs=1e-12), key
    assert 0 < got["mrr"] < 1, "a ranking with nothing to get wrong would tell nothing"


def test_each_triples_answers_are_the_single_querys_without_the_other_known_answers(trained, tmp_path):
    """The file's lines: the triple, then ``Heads:`` and ``Tails:`` with entity and score pairs, best first;
    asked for every entity (-k 40), each list holds what ``--query`` answers for that query, with the same
    scores, less the other answers the graph knows in any split (the asked answer kept)."""
    directory, out = trained
    to = tmp_path / "ranks.txt"
    ranked(out, directory / "test.txt", to, "-k", "40")
    lines = to.read_text().splitlines()
    triples = [line.split("\t") for line in (directory / "test.txt").read_text().splitlines()]
    assert len(lines) == 3 * len(triples)
    splits = ("train", "valid", "test")
    known = {tuple(x.split("\t")) for s in splits for x in (directory / f"{s}.txt").read_text().splitlines()}
    for at, (h, rel, t) in enumerate(triples):
        assert lines[3 * at].split("\t") == [h, rel, t]
        for line, label, query, own in (
            (lines[3 * at + 1], "Heads: ", f"r(?, {t})", h),
            (lines[3 * at + 2], "Tails: ", f"r({h}, ?)", t),
        ):
            assert line.startswith(label)
            fields = line[len(label) :].split("\t")
            listed = [(fields[i], float(fields[i + 1])) for i in range(0, len(fields), 2)]
            assert [s for _, s in listed] == sorted((s for _, s in listed), reverse=True)
            asked = runner.invoke(app, ["kg", "predict", str(out), "--query", query, "-k", "40", "--json"])
            single = {a["entity"]: a["score"] for a in json.loads(asked.output)["answers"]}
            other = {e for e in single if e != own and ((e, rel, t) if label == "Heads: " else (h, rel, e)) in known}
            assert dict(listed) == pytest.approx({e: s for e, s in single.items() if e not in other}, abs=1e-5)


def test_kg_eval_scores_the_file_as_kg_predict_ranked_it(trained, tmp_path):
    """Every candidate listed (-k 40, all the entities), ``kg eval`` reads back the ranks ``kg predict`` printed
    (on this graph no two candidates are tied in both score and popularity, where kg predict ties them and the
    file's order does not); with fewer listed, an answer below the list ranks at the mean of the rest."""
    directory, out = trained
    for k in ("40", "3"):
        to = tmp_path / f"ranks{k}.txt"
        printed = ranked(out, directory / "test.txt", to, "-k", k)
        result = runner.invoke(app, ["kg", "eval", str(directory), "--ranking", str(to), "--json"])
        assert result.exit_code == 0, result.output
        scored = json.loads(result.output)
        assert scored["queries"] == printed["queries"] == 24
        assert scored["covers"]["test"] == {"ranked": 12, "of": 12}
        if k == "40":
            for key in ("mrr", "hits@1", "hits@3", "hits@10"):
                assert scored[key] == pytest.approx(printed[key], abs=1e-12), key
        else:
            assert scored["hits@1"] == printed["hits@1"] and scored["mrr"] != printed["mrr"]


def test_relations_ranked_side_by_side_write_the_same_file(trained, tmp_path):
    """Two relations' triples ranked by two worker processes and by this one give the same bytes."""
    directory, out = trained
    queries = tmp_path / "queries.txt"
    q = [line for line in (directory / "train.txt").read_text().splitlines() if line.split("\t")[1] == "q"]
    queries.write_text((directory / "test.txt").read_text() + "".join(x + "\n" for x in q[:5]))
    one, two = (
        ranked(out, queries, tmp_path / "one.txt", "--jobs", "1"),
        ranked(out, queries, tmp_path / "two.txt", "--jobs", "2"),
    )
    assert (tmp_path / "one.txt").read_bytes() == (tmp_path / "two.txt").read_bytes()
    assert one["mrr"] == two["mrr"] and one["queries"] == 2 * 17


def test_a_ranking_worker_that_dies_is_named_and_nothing_is_written(trained, tmp_path, monkeypatch):
    """A worker killed while it ranks a relation (say for memory): exit 1, the relation and what the worker was
    doing named, no ranking file."""
    from nlndl import kg_rules

    directory, out = trained
    queries = tmp_path / "queries.txt"
    q = [line for line in (directory / "train.txt").read_text().splitlines() if line.split("\t")[1] == "q"]
    queries.write_text((directory / "test.txt").read_text() + "".join(x + "\n" for x in q[:5]))
    monkeypatch.setattr(kg_rules, "answer_relation", _die)
    to = tmp_path / "ranks.txt"
    args = ["kg", "predict", str(out), "--queries", str(queries), "--ranking", str(to), "--jobs", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert "worker process ranking relation" in result.output and "ended without a result" in result.output
    assert not to.exists()


def _die(*args, **kwargs):
    import os

    os._exit(9)  # as a worker killed for memory would end


def test_bad_queries_are_located_and_nothing_is_written(trained, tmp_path):
    directory, out = trained
    to = tmp_path / "ranks.txt"
    cases = {
        "e1\tr\te2\ne1\tr\tnobody\n": "queries.txt:2:6: error: no entity 'nobody'",
        "e1\tr\te2\ne3\tuncle\te4\n": "queries.txt:2:4: error: no rules for 'uncle'",
        "e1\tr\te2\ne1\tr\n": "queries.txt:2:1: error: expected 3 tab-separated fields, got 2",
    }
    for text, message in cases.items():
        queries = tmp_path / "queries.txt"
        queries.write_text(text)
        result = runner.invoke(app, ["kg", "predict", str(out), "--queries", str(queries), "--ranking", str(to)])
        assert result.exit_code == 1 and message in result.output, result.output
        assert not to.exists()
    queries = directory / "test.txt"
    assert runner.invoke(app, ["kg", "predict", str(out), "--queries", str(queries)]).exit_code == 2
    both = ["kg", "predict", str(out), "--queries", str(queries), "--ranking", str(to), "--query", "r(e1, ?)"]
    assert runner.invoke(app, both).exit_code == 2
    assert runner.invoke(app, ["kg", "predict", str(out), "--query", "r(e1, ?)", "--ranking", str(to)]).exit_code == 2
    assert not to.exists()
    for theirs in (queries, directory / "train.txt", out / "rules.json"):
        before = theirs.read_bytes()
        result = runner.invoke(app, ["kg", "predict", str(out), "--queries", str(queries), "--ranking", str(theirs)])
        assert result.exit_code == 1 and "error: would replace" in result.output, result.output
        assert theirs.read_bytes() == before


def test_ranking_valid_triples_says_that_kg_train_never_drew_them_as_negatives(trained, tmp_path):
    """kg train keeps valid.txt's triples out of its negatives, so figures on them favour the clauses: said
    where the queries hold them, and of how many; test.txt's, drawn as any unknown triple, draw no remark."""
    directory, out = trained
    queries = tmp_path / "queries.txt"
    queries.write_text((directory / "test.txt").read_text() + (directory / "valid.txt").read_text())
    assert ranked(out, queries, tmp_path / "a.txt")["valid_triples"] == 6
    args = ["kg", "predict", str(out), "--queries", str(queries), "--ranking", str(tmp_path / "b.txt")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "6 of the triples are valid.txt's, which kg train never draws as negatives" in result.output
    args = ["kg", "predict", str(out), "--queries", str(directory / "test.txt"), "--ranking", str(tmp_path / "c.txt")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and "valid.txt" not in result.output
    assert ranked(out, directory / "test.txt", tmp_path / "d.txt")["valid_triples"] == 0
