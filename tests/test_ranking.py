"""Knowledge-graph completion metrics: filtered mean-tie ranks both ways, the path-rule baseline, and the
ranking of learned rules, on small graphs written here."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import sparse
from typer.testing import CliRunner

from nlndl.bench import kg
from nlndl.cli import app
from nlndl.compiler.crisp import BodyAtom, Rule
from nlndl.engines import clingo_model
from nlndl.kg_rules import Graph, confidence, rule_pairs
from nlndl.ranking import (
    AGGREGATIONS,
    DAMPING,
    TIE_BREAK,
    TOP,
    Aggregate,
    Classed,
    Ranker,
    Reduced,
    mean_rank,
    metrics,
    noisy_or,
    popularity,
    ranks,
    ranks_of,
    top_of,
    top_of_levels,
    top_of_rows,
)

runner = CliRunner()


def test_ties_count_at_the_mean_rank_of_the_tied_group():
    scores = np.array([0.0, 0.5, 0.5, 0.5, 0.9])
    assert mean_rank(scores, 1, np.array([], dtype=np.int64)) == 1 + (3 + 1) / 2  # one better, three tied
    assert mean_rank(scores, 4, np.array([], dtype=np.int64)) == 1
    assert mean_rank(scores, 1, np.array([4, 2])) == 1.5, "filtered candidates are left out"
    assert mean_rank(np.zeros(101), 7, np.array([], dtype=np.int64)) == 51, "underived: the middle, not first"


def test_metrics_of_ranks():
    m = metrics(np.array([1.0, 2.0, 4.0, 20.0]))
    assert m.mrr == pytest.approx((1 + 1 / 2 + 1 / 4 + 1 / 20) / 4)
    assert (m.hits1, m.hits3, m.hits10, m.queries) == (0.25, 0.5, 0.75, 4)


def test_noisy_or_combines_the_rules_deriving_a_pair():
    a = sparse.csr_matrix(np.array([[0, 1], [0, 0]], dtype=np.int8))
    b = sparse.csr_matrix(np.array([[0, 1], [1, 0]], dtype=np.int8))
    scores = noisy_or([(a, 0.5), (b, 0.2)], (2, 2)).toarray()
    np.testing.assert_allclose(scores, [[0, 1 - 0.5 * 0.8], [0.2, 0]])


def scored(matrix: np.ndarray) -> Aggregate:
    """One rule per score in ``matrix``, deriving the pairs of that score."""
    values = sorted(set(matrix.ravel().tolist()) - {0.0})
    return Aggregate.of([(sparse.csr_matrix(matrix == v), v) for v in values], matrix.shape)


def test_ranks_ask_both_directions_and_filter_known_pairs():
    rules = scored(np.array([[0, 0.9, 0.8], [0, 0, 0.8], [0.7, 0, 0]]))
    found = ranks(rules, [(0, 2)], known={(0, 1), (0, 2)})
    assert found.tolist() == [1.0, 1.5]  # tail of 0: (0, 1) filtered out; head of 2: 0 tied with 1


def test_further_rules_join_the_aggregate_and_only_where_asked():
    rules = scored(np.array([[0, 0.9, 0.3], [0, 0, 0.8], [0.7, 0, 0]]))
    calls = []

    def extra(entity: int, tail_asked: bool) -> Reduced:
        calls.append((entity, tail_asked))
        return top_of(np.array([2] if tail_asked else [], np.int64), np.array([0.95] if tail_asked else []))

    without, taken = ranks_of([(rules, "max", False), (rules, "max", True)], [(0, 2)], {(0, 2)}, extra=extra)
    assert without.tolist() == ranks(rules, [(0, 2)], {(0, 2)}, how="max").tolist() == [2.0, 2.0]
    assert taken.tolist() == [1.0, 2.0], "0.95 lifts 2 above 1 as a tail of 0; the head query is unchanged"
    assert calls == [(0, True), (2, False)], "computed once a query, for both rankings"


def brute(confidences: list[float], how: str) -> float:
    """One candidate's score from every confidence of the rules deriving it, as the docs say."""
    if not confidences:
        return 0.0
    ordered = sorted(confidences, reverse=True)
    either = 1 - np.prod([1 - c for c in ordered])
    if how == "noisy-or":
        return either
    if how == "max":
        return ordered[0] + TIE_BREAK * either
    return 1 - (1 - ordered[0]) * np.prod([1 - DAMPING * c for c in ordered[1:TOP]])


@pytest.mark.parametrize("buffer", [3, 10**9])
def test_aggregates_match_every_rule_counted_by_hand(monkeypatch, buffer):
    """Reduced now and then (a small buffer) or once: per pair the same scores as from all its rules, with the
    rules of a query's further entries (rules with a constant) taken in as the others are."""
    monkeypatch.setattr(Aggregate, "BUFFER", buffer)
    rng = np.random.default_rng(3)
    shape = (4, 5)
    rules = [(sparse.csr_matrix(rng.random(shape) < 0.5), float(c)) for c in rng.choice([0.2, 0.5, 0.7, 0.9], 12)]
    agg = Aggregate.of(rules, shape)
    entries = (np.array([0, 0, 3, 4]), np.array([0.6, 0.95, 0.2, 0.5]))
    extra = top_of(*entries)
    for how in AGGREGATIONS:
        whole = agg.scores(how).toarray()
        for h in range(shape[0]):
            for t in range(shape[1]):
                want = [c for pairs, c in rules if pairs[h, t]]
                assert whole[h, t] == pytest.approx(brute(want, how))
        for h in range(shape[0]):
            line = agg.line(h, True, shape[1], how, extra)
            for t in range(shape[1]):
                want = [c for pairs, c in rules if pairs[h, t]] + entries[1][entries[0] == t].tolist()
                assert line[t] == pytest.approx(brute(want, how)), (how, h, t)
        for t in range(shape[1]):
            column = agg.line(t, False, shape[0], how)
            np.testing.assert_allclose(column, whole[:, t])


def test_top_of_sorts_by_candidate_then_best_first():
    rng = np.random.default_rng(11)
    for size in (0, 1, 50, 5000):
        candidates = rng.integers(0, 40, size).astype(np.int64) * 10**9  # keys as large as pair keys get
        confidences = rng.choice([0.1, 0.25, 0.5, 0.9, 1.0], size)
        found, top, log_miss = top_of(candidates, confidences)
        assert np.array_equal(found, np.unique(candidates))
        for k, candidate in enumerate(found):
            mine = np.sort(confidences[candidates == candidate])[::-1]
            assert top[k, : min(TOP, mine.size)].tolist() == mine[:TOP].tolist()
            assert log_miss[k] == pytest.approx(np.log1p(-np.minimum(mine, 1 - 1e-9)).sum())


def test_an_aggregate_keeps_the_asked_rows_and_columns_and_a_copy_goes_its_own_way():
    rng = np.random.default_rng(4)
    shape = (6, 7)
    rows, columns = np.array([1, 4, 4]), np.array([0, 5])
    rules = [(sparse.csr_matrix(rng.random(shape) < 0.4), float(c)) for c in (0.9, 0.6, 0.3)]
    kept = Aggregate(shape, rows, columns)
    mask = np.zeros(shape, dtype=bool)
    mask[[1, 4], :] = True
    mask[:, [0, 5]] = True
    for pairs, of_rule in rules:
        r, c = (np.asarray(x, np.int64) for x in pairs.nonzero())
        assert np.array_equal(kept.keeps(r, c), mask[r, c])
        kept.add(pairs, of_rule)
    held = kept.scores("top").toarray() != 0
    assert np.array_equal(held, np.logical_or.reduce([p.toarray() for p, _ in rules]) & mask)
    first = Aggregate.of(rules[:2], shape)
    before = first.scores("top").toarray()
    copied = first.copy()
    copied.add(*rules[2])
    assert np.array_equal(first.scores("top").toarray(), before), "the original is untouched"
    assert np.allclose(copied.scores("top").toarray(), Aggregate.of(rules, shape).scores("top").toarray())


def test_an_aggregate_past_its_buffer_is_not_reduced_at_every_rule(monkeypatch):
    """Where half the reduced pairs exceed the buffer, the next fold waits until that many more are held:
    a few reductions for 300 rules, not one a rule."""
    monkeypatch.setattr(Aggregate, "BUFFER", 3)
    reductions = [0]
    reduce = Aggregate._reduce

    def counted(self):
        if self.pending:
            reductions[0] += 1
        return reduce(self)

    monkeypatch.setattr(Aggregate, "_reduce", counted)
    shape = (300, 300)
    agg = Aggregate(shape)
    for k in range(300):  # each rule its own ten pairs
        agg.add(sparse.csr_matrix((np.ones(10), (np.full(10, k), np.arange(10))), shape=shape), 0.5)
    assert reductions[0] < 20, reductions[0]
    assert agg.scores("max").nnz == 3000


def graph(tmp_path: Path) -> Path:
    """aunt = sister of a parent, over eight families; two families' aunt triples held out for test."""
    facts, train, test = [], [], []
    for f in range(8):
        mother, sister, kids = f"m{f}", f"s{f}", [f"k{f}a", f"k{f}b"]
        facts += [f"{mother}\tsister\t{sister}", f"{sister}\tsister\t{mother}"]
        facts += [f"{mother}\tparent\t{k}" for k in kids]
        (train if f < 6 else test).extend(f"{sister}\taunt\t{k}" for k in kids)
    directory = tmp_path / "kg"
    directory.mkdir()
    for name, rows in (("facts", facts), ("train", train), ("test", test)):
        (directory / f"{name}.txt").write_text("".join(r + "\n" for r in rows))
    return directory


def test_the_baseline_mines_sister_of_parent_and_ranks_the_held_out_triples_first(tmp_path):
    g = Graph.read(graph(tmp_path))
    mined = {text: conf for text, _, conf in kg.path_rules(g, "aunt")}
    assert mined["aunt(X,Y) :- sister(X,A), parent(A,Y)"] == 12 / 16  # the test pairs are not known
    m = kg.baseline(g, "aunt")
    assert m.queries == 8 and m.mrr == 1.0


def test_learned_rules_are_ranked_by_their_confidence(tmp_path):
    g = Graph.read(graph(tmp_path))
    names = {r: r for r in g.relations}
    good = Rule(
        "aunt",
        (("v", "A"), ("v", "B")),
        (BodyAtom("sister", (("v", "A"), ("v", "C"))), BodyAtom("parent", (("v", "C"), ("v", "B")))),
    )
    pairs = rule_pairs(g, [good], names)
    assert confidence(pairs[0], g.matrix(g.pairs("aunt", ("facts", "train"))))[0] == pytest.approx(12 / 16)
    assert kg.evaluate_rules(g, "aunt", [(pairs[0], 0.75)]).mrr == 1.0
    assert kg.evaluate_rules(g, "aunt", []).mrr < 0.2, "no rule: every candidate tied"


def test_bench_kg_learns_and_ranks_side_by_side(tmp_path):
    directory = graph(tmp_path)
    out = tmp_path / "kg.json"
    args = ["bench", "kg", str(directory), "--relation", "aunt", "--time-limit", "30", "--json", str(out), "-q"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    (row,) = report["relations"]
    assert row["baseline"]["mrr"] == 1.0 and row["nlndl"]["mrr"] == 1.0
    program = row["nlndl"]["program"]
    assert program["mrr"] == 1.0 and program["test_precision"] == 1.0 and program["test_recall"] == 1.0
    assert row["nlndl"]["clauses"], "every clause read out is reported with its confidence"
    assert "| aunt | 4 | 1.000 |" in result.output
    missing = runner.invoke(app, ["bench", "kg", str(directory), "--relation", "uncle", "--baseline-only"])
    assert missing.exit_code == 1 and "no relation 'uncle'" in missing.output


def test_kg_train_writes_every_relation_as_one_program_that_clingo_runs(tmp_path):
    directory = graph(tmp_path)
    facts = (directory / "facts.txt").read_text() + "s0\taunt\tk0a\n"  # a known aunt triple: aunt_fact
    (directory / "facts.txt").write_text(facts)
    out = tmp_path / "out"
    result = runner.invoke(app, ["kg", "train", str(directory), "-D", str(out), "--time-limit", "30"])
    assert result.exit_code == 0, result.output
    assert "[1/1] aunt: accepted" in result.output and "agree on the program's closure" in result.output
    written = {"rules.dl", "rules.lp", "rules.tsv", "facts.lp", "rules.json"}
    facts = {f"{r}.facts" for r in ("aunt", "aunt_fact", "parent", "sister")}
    assert {p.name for p in out.iterdir()} - {".nlndl-manifest.json"} == written | facts
    program = (out / "rules.lp").read_text()
    assert any(f"aunt(A, B) :- parent(C, B), {s}." in program for s in ("sister(C, A)", "sister(A, C)")), program
    assert ".input aunt_fact" in (out / "rules.dl").read_text()
    report = json.loads((out / "rules.json").read_text())
    assert report["closure"]["clingo_agrees_with_crisp"] and report["relations"][0]["confidences"] == [0.75]
    model = clingo_model(program + (out / "facts.lp").read_text())
    assert ("aunt", ("s6", "k6a")) in model and ("aunt", ("s7", "k7b")) in model, "the held-out test triples"


def test_kg_train_refuses_before_learning_and_keeps_the_users_files(tmp_path):
    directory = graph(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "rules.dl").write_text("mine\n")
    taken = runner.invoke(app, ["kg", "train", str(directory), "-D", str(out)])
    assert taken.exit_code == 1 and "rules.dl" in taken.output and (out / "rules.dl").read_text() == "mine\n"
    empty = runner.invoke(app, ["kg", "train", str(directory), "--relation", "parent", "-D", str(tmp_path / "o2")])
    assert empty.exit_code == 1 and f"{directory / 'train.txt'}: error: no triple of 'parent'" in empty.output
    assert not (tmp_path / "o2").exists()


def test_a_prior_orders_only_candidates_of_equal_score():
    scores = np.array([0.9, 0.0, 0.0, 0.0, 0.5])
    prior = np.array([0.0, 1.0, 3.0, 2.0, 0.0])
    none = np.array([], dtype=np.int64)
    assert mean_rank(scores, 4, none, prior) == 2, "the prior never lifts a candidate over a better score"
    assert mean_rank(scores, 2, none, prior) == 3, "best of the unscored by the prior"
    assert mean_rank(scores, 1, none, prior) == 5
    assert mean_rank(scores, 1, none, np.zeros(5)) == mean_rank(scores, 1, none), "an even prior ties as before"


def test_popularity_counts_the_known_pairs_each_entity_answers():
    known = sparse.csr_matrix(np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]], dtype=np.float32))
    tails, heads = popularity(known)
    assert tails.tolist() == [0, 1, 2] and heads.tolist() == [2, 1, 0]


def test_the_top_of_rules_in_order_of_confidence_is_read_off_a_matrix():
    rng = np.random.default_rng(5)
    rules = sparse.csr_matrix(rng.random((9, 12)) < 0.6)
    confidences = np.sort(rng.choice([0.1, 0.3, 0.6, 0.8], 12))[::-1].copy()
    coo = rules.tocoo()
    want = top_of(coo.row.astype(np.int64), confidences[coo.col])
    for got, expected in zip(top_of_rows(rules, confidences), want, strict=True):
        np.testing.assert_allclose(got, expected)


def test_many_entries_given_as_levels_keep_the_same_best():
    """Past four entries a candidate, entries are first counted in bands of confidence and only those that can
    be among a candidate's best are sorted: the same top and noisy-or as sorting them all."""
    rng = np.random.default_rng(8)
    values = np.sort(rng.choice(np.linspace(0.01, 0.99, 500), 300, replace=False))
    for count in (20, 4000):
        candidates = rng.integers(0, 30, count)
        levels = rng.integers(0, values.size, count)
        got = top_of_levels(candidates, levels, values)
        for a, b in zip(got, top_of(candidates, values[levels]), strict=True):
            np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("with_prior", [False, True])
def test_ranks_from_the_scored_candidates_alone_are_the_mean_ranks_of_the_whole_row(with_prior):
    """Ranker counts the unscored entities by the sorted prior: the same rank as mean_rank over every entity,
    answers scored or not, filtered or not, ties in score and in prior."""
    rng = np.random.default_rng(11)
    size = 40
    for _ in range(300):
        prior = rng.integers(0, 4, size).astype(float) if with_prior else None
        ranker = Ranker(size, prior)
        candidates = np.sort(rng.choice(size, rng.integers(0, 12), replace=False))
        scores = rng.choice([0.2, 0.5, 0.9], candidates.size)
        answer = int(rng.integers(size))
        filtered = rng.choice(size, rng.integers(0, 6))  # may hold the answer and repeat an entity
        row = np.zeros(size)
        row[candidates] = scores
        assert ranker.rank(candidates, scores, answer, filtered) == mean_rank(row, answer, filtered, prior)


def test_kg_train_leaves_a_closure_past_its_bound_to_nlndl_alone(tmp_path, monkeypatch):
    """Past KG_CHECKED_CLOSURE new triples the written program is not also run by clingo: the run says so,
    rules.json holds null for the agreement, and it exits 0."""
    import nlndl.engines
    from nlndl.jobs import kg as kg_jobs

    def refuse(*args, **kwargs):
        raise AssertionError("clingo was run")

    monkeypatch.setattr(kg_jobs, "KG_CHECKED_CLOSURE", 0)
    monkeypatch.setattr(nlndl.engines, "clingo_model", refuse)
    out = tmp_path / "rules"
    result = runner.invoke(app, ["kg", "train", str(graph(tmp_path)), "-D", str(out), "--time-limit", "30", "-q"])
    assert result.exit_code == 0, result.output
    assert "past 0: not also run by clingo" in result.output
    report = json.loads((out / "rules.json").read_text())
    assert report["closure"]["clingo_agrees_with_crisp"] is None and report["closure"]["derived"] > 0


def test_a_rule_given_as_entries_is_taken_in_as_its_matrix_is():
    """Aggregate.add_entries and Classed.add_entries (a counted path rule's rows and columns) give the state that
    add gives from the same pairs as a matrix, with and without kept rows and columns."""
    rng = np.random.default_rng(7)
    shape = (9, 9)
    known = sparse.csr_matrix(rng.random(shape) < 0.3)
    rules = [(sparse.csr_matrix(rng.random(shape) < 0.4), float(c)) for c in (0.9, 0.6, 0.6, 0.2)]
    asked = (np.array([0, 3, 8]), np.array([1, 3]))
    for chosen in (None, asked):
        extra = () if chosen is None else chosen
        by_matrix, by_entries = Aggregate(shape, *extra), Aggregate(shape, *extra)
        classed_matrix, classed_entries = Classed(shape, known, *extra), Classed(shape, known, *extra)
        for pairs, of_rule in rules:
            rows, columns = (np.asarray(x, np.int64) for x in pairs.nonzero())
            by_matrix.add(pairs, of_rule)
            by_entries.add_entries(rows, columns, of_rule)
            classed_matrix.add(pairs, of_rule)
            classed_entries.add_entries(rows, columns, of_rule)
        pairs_of = [(by_matrix, by_entries), (classed_matrix.tails, classed_entries.tails)]
        pairs_of.append((classed_matrix.heads, classed_entries.heads))
        for one, other in pairs_of:
            assert one.reduced[0].size or one.pending
            for a, b in zip(one._reduce(), other._reduce(), strict=True):
                assert np.array_equal(a, b)
