"""``nlndl kg eval DATA_DIR --ranking FILE``: a ranking file in AnyBURL's format scored by bench kg's protocol
(filtered, both directions, the file's order, an answer not listed at the mean rank of the rest); bad files are
located errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nlndl.cli import app
from nlndl.ranking_file import rank_in_list

runner = CliRunner()


def small_graph(directory: Path) -> Path:
    """Eight entities a..h; r holds a->b, a->c, d->b in train, e->f in valid, a->g and e->h in test."""
    directory.mkdir()
    (directory / "train.txt").write_text("a\tr\tb\na\tr\tc\nd\tr\tb\nb\tp\tc\n")
    (directory / "valid.txt").write_text("e\tr\tf\n")
    (directory / "test.txt").write_text("a\tr\tg\ne\tr\th\n")
    return directory


def scored(directory: Path, ranking: Path) -> dict:
    result = runner.invoke(app, ["kg", "eval", str(directory), "--ranking", str(ranking), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_listed_answer_ranks_by_its_place_less_the_other_known_answers(tmp_path):
    """a r g: tails listed b, h, g; b is another known tail of a (train), so g ranks 2nd. Heads of r(?, g):
    listed d, a: a ranks 2nd. e r h: tails listed f (known, valid), h: h ranks 1st; heads listed nothing: h's
    head e ranks at the mean of the 8 candidates, (8 + 1) / 2 = 4.5."""
    directory = small_graph(tmp_path / "kg")
    ranking = tmp_path / "ranks.txt"
    ranking.write_text(
        "a\tr\tg\nHeads: d\t0.9\ta\t0.5\nTails: b\t0.9\th\t0.8\tg\t0.7\ne\tr\th\nHeads: \nTails: f\t0.9\th\t0.5\n"
    )
    got = scored(directory, ranking)
    ranks = [2, 2, 4.5, 1]
    assert got["queries"] == 4 and got["triples"] == 2
    assert got["mrr"] == pytest.approx(sum(1 / r for r in ranks) / 4)
    assert got["hits@1"] == pytest.approx(1 / 4) and got["hits@3"] == pytest.approx(3 / 4)
    assert got["covers"] == {"valid": {"ranked": 0, "of": 1}, "test": {"ranked": 2, "of": 2}}
    assert set(got["relations"]) == {"r"} and got["relations"]["r"]["mrr"] == got["mrr"]
    assert got["heads"]["mrr"] == pytest.approx((1 / 2 + 1 / 4.5) / 2) and got["tails"]["mrr"] == pytest.approx(3 / 4)


def test_an_answer_not_listed_ties_with_the_unlisted_candidates_that_are_not_known_answers():
    """Ten entities; the answer's query has two other known answers, one of them listed: the list keeps one
    candidate (x), and the answer ties with the 10 - 2 - 1 = 7 candidates left, at 1 + (7 + 1) / 2."""
    assert rank_in_list(["k1", "x"], "t", {"k1", "k2"}, 10) == 1 + (7 + 1) / 2
    assert rank_in_list(["k1", "x", "t"], "t", {"k1", "k2"}, 10) == 2
    assert rank_in_list([], "t", set(), 10) == 5.5


def test_anyburls_space_separated_triples_and_trailing_tabs_and_a_gzipped_file_read_the_same(tmp_path):
    import gzip

    directory = small_graph(tmp_path / "kg")
    tabbed = "a\tr\tg\nHeads: d\t0.9\ta\t0.5\nTails: g\t0.7\n"
    spaced = "a r g\nHeads: d\t0.9\ta\t0.5\t\nTails: g\t0.7\t\n"  # AnyBURL ends each list with a tab
    (tmp_path / "tab.txt").write_text(tabbed)
    (tmp_path / "space.txt").write_text(spaced.replace("\n", "\r\n"))
    (tmp_path / "space.txt.gz").write_bytes(gzip.compress(spaced.encode()))
    got = [scored(directory, tmp_path / name) for name in ("tab.txt", "space.txt", "space.txt.gz")]
    assert got[0]["mrr"] == got[1]["mrr"] == got[2]["mrr"] == pytest.approx((1 / 2 + 1) / 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a\tr\tg\nHeads: d\t0.9\n", "ranks.txt:2:1: error: a triple's group ends early"),
        ("a\tr\tnobody\nHeads: \nTails: \n", "ranks.txt:1:5: error: no entity 'nobody' in the graph"),
        ("a\tuncle\tg\nHeads: \nTails: \n", "ranks.txt:1:3: error: no relation 'uncle' in the graph"),
        ("a\tr\tg\nHeads: d\t0.9\nTails: g\tlots\n", "ranks.txt:3:10: error: expected a score after 'g', got 'lots'"),
        ("a\tr\tg\nHeads: d\t0.9\nTails: g\n", "ranks.txt:3:9: error: expected entity and score pairs"),
        ("a\tr\tg\nTails: g\t1\nHeads: d\t0.9\n", "ranks.txt:2:1: error: expected a line starting 'Heads:'"),
        ("a\tr\nHeads: \nTails: \n", "ranks.txt:1:1: error: expected a triple (head, relation, tail), got 2 fields"),
        ("a\tr\tg\nHeads: zz\t0.9\nTails: \n", "ranks.txt:2:8: error: no entity 'zz' in the graph"),
        ("\n\n", "ranks.txt:1:1: error: no ranked triple in the file"),
    ],
)
def test_a_bad_ranking_file_is_a_located_error(tmp_path, text, message):
    directory = small_graph(tmp_path / "kg")
    ranking = tmp_path / "ranks.txt"
    ranking.write_text(text)
    result = runner.invoke(app, ["kg", "eval", str(directory), "--ranking", str(ranking)])
    assert result.exit_code == 1, result.output
    assert message in result.output, result.output
    assert "Traceback" not in result.output


def test_the_text_report_says_how_much_of_each_split_the_file_ranks(tmp_path):
    directory = small_graph(tmp_path / "kg")
    ranking = tmp_path / "ranks.txt"
    ranking.write_text("a\tr\tg\nHeads: a\t0.5\nTails: g\t0.7\n")
    result = runner.invoke(app, ["kg", "eval", str(directory), "--ranking", str(ranking)])
    assert result.exit_code == 0, result.output
    assert "1 triple asked both ways (0 of valid.txt's 1; 1 of test.txt's 2); MRR 1.0000" in result.output
