"""The stored LALR tables of the sketch grammar: current, used, and the same parser as lark builds."""

import json
from pathlib import Path

import lark
import pytest
from lark import Token, UnexpectedInput

from nlndl.compiler import grammar_tables, parser

ROOT = Path(__file__).resolve().parents[1]
SKETCHES = sorted([*ROOT.glob("examples/**/*.dl"), *ROOT.glob("tests/sketches/**/*.dl")])
BROKEN = [".decl p(x: Num\n", "p(1,2", ".learn q(vars=3 terms=4)", "foo bar.", "p(1) :- .", '.pos p("a).']


def test_the_stored_tables_are_those_of_this_grammar():
    """lark numbers its states differently from build to build, so the tables are compared by the grammar
    they were made from and by what they parse (below), not byte for byte."""
    stored = json.loads((ROOT / "compiler" / grammar_tables.TABLES).read_text())
    assert stored["grammar_sha256"] == grammar_tables.digest(grammar_tables.grammar_text()), (
        "compiler/grammar.tables.json is stale: python -c "
        '"from nlndl.compiler import grammar_tables; grammar_tables.write()" writes it anew'
    )


def test_a_run_loads_the_stored_tables():
    assert grammar_tables.load(grammar_tables.grammar_text()) is not None


def test_the_loaded_parser_reads_every_sketch_as_the_built_one():
    text = grammar_tables.grammar_text()
    loaded, built = grammar_tables.load(text), grammar_tables.build(text)
    assert len(SKETCHES) > 30
    for path in SKETCHES:
        source = path.read_text()
        try:
            expected = built.parse(source)
        except UnexpectedInput as exc:
            with pytest.raises(type(exc)) as caught:
                loaded.parse(source)
            assert _failure(caught.value) == _failure(exc), path
            continue
        tree = loaded.parse(source)
        assert tree == expected, path
        assert _spans(tree) == _spans(expected), path


def _spans(tree: lark.Tree) -> list[tuple[int, ...]]:
    tokens = tree.scan_values(lambda v: isinstance(v, Token))
    return [(t.line, t.column, t.end_line, t.end_column) for t in tokens]


@pytest.mark.parametrize("source", BROKEN)
def test_the_loaded_parser_fails_where_and_as_the_built_one(source: str):
    text = grammar_tables.grammar_text()
    with pytest.raises(UnexpectedInput) as built:
        grammar_tables.build(text).parse(source)
    with pytest.raises(UnexpectedInput) as loaded:
        grammar_tables.load(text).parse(source)
    assert _failure(loaded.value) == _failure(built.value)


def _failure(exc: UnexpectedInput) -> tuple:
    """What nlndl's diagnostics read of a syntax error: its kind, place, token and the expected terminals."""
    expected = getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ()
    accepts = getattr(exc, "accepts", None) or ()
    return type(exc), exc.line, exc.column, str(getattr(exc, "token", "")), sorted(expected), sorted(accepts)


def test_tables_of_another_grammar_or_lark_version_are_not_used(monkeypatch: pytest.MonkeyPatch):
    text = grammar_tables.grammar_text()
    assert grammar_tables.load(text + "\n// changed\n") is None
    monkeypatch.setattr(lark, "__version__", "0.0.1")
    assert grammar_tables.load(text) is None
    parser.grammar.cache_clear()
    try:  # the parser is then built from the grammar, and sketches still parse
        result = parser.parse_source((ROOT / "examples/ilp/less_than/sketch.dl").read_text(), "sketch.dl")
    finally:
        parser.grammar.cache_clear()
    assert result is not None


def test_damaged_tables_are_not_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    text = grammar_tables.grammar_text()
    stored = json.loads((ROOT / "compiler" / grammar_tables.TABLES).read_text())
    del stored["tables"]["data"]["parser"]
    damaged = tmp_path / "compiler"
    damaged.mkdir()
    (damaged / grammar_tables.TABLES).write_text(json.dumps(stored))
    monkeypatch.setattr(grammar_tables, "files", lambda package: damaged)
    assert grammar_tables.load(text) is None


def test_written_tables_appear_whole(tmp_path: Path):
    target = tmp_path / "tables.json"
    assert grammar_tables.write(target) == target
    assert [p.name for p in tmp_path.iterdir()] == ["tables.json"]
    stored = json.loads(target.read_text(), object_hook=grammar_tables._decode)
    source = (ROOT / "examples/ilp/less_than/sketch.dl").read_text()
    assert lark.Lark.load(stored["tables"]).parse(source) == grammar_tables.build(grammar_tables.grammar_text()).parse(
        source
    )
