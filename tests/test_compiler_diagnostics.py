"""Golden diagnostics: every sketch under tests/sketches/errors renders exactly its .err file."""

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from nlndl.cli import app
from nlndl.compiler import CompileError, compile_sketch
from nlndl.compiler.parser import parse_text

ERRORS = Path(__file__).parent / "sketches" / "errors"
CASES = sorted(ERRORS.glob("*.dl"))


@pytest.mark.parametrize("sketch", CASES, ids=[c.stem for c in CASES])
def test_golden_error(sketch, monkeypatch):
    monkeypatch.chdir(ERRORS)  # messages name the file as given: "name.dl:line:col"
    with pytest.raises(CompileError) as info:
        compile_sketch(Path(sketch.name))
    assert info.value.diagnostics.render() + "\n" == sketch.with_suffix(".err").read_text()


def test_cli_prints_diagnostics_and_exits_1():
    result = CliRunner().invoke(app, ["compile", str(ERRORS / "syntax_missing_dot.dl")])
    assert result.exit_code == 1
    first = result.output.splitlines()[0]
    assert first.endswith("syntax_missing_dot.dl:3:1: error: unexpected 'edge'; expected '.', ':-'")


def test_every_golden_file_has_a_sketch():
    assert {p.stem for p in ERRORS.glob("*.err")} == {p.stem for p in CASES}
    assert len(CASES) >= 8


sketch_alphabet = st.sampled_from(
    list('.decl type learn pos neg closed world input steps include ( ) , . : :- ! [ ] { } = "a" X Y 3 edge p\n //*')
)


@settings(max_examples=300, deadline=None)
@given(st.lists(sketch_alphabet, max_size=40).map(" ".join) | st.text(max_size=80))
def test_fuzzed_parser_only_reports_diagnostics(text):
    """Any text parses to a sketch or to located diagnostics: never another exception."""
    sketch, diags = parse_text(text, "fuzz.dl")
    for d in diags.errors:
        assert d.span.file == "fuzz.dl" and d.span.line >= 1 and d.span.column >= 1
    rendered = diags.render()
    assert rendered.endswith("generated")


@settings(max_examples=100, deadline=None)
@given(st.lists(sketch_alphabet, max_size=40).map(" ".join))
def test_fuzzed_compile_only_raises_compile_errors(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fuzz") / "s.dl"
    path.write_text(text)
    cwd = os.getcwd()
    try:
        compile_sketch(path)
    except CompileError:
        pass
    finally:
        os.chdir(cwd)


def test_language_doc_carries_the_grammar_verbatim():
    root = Path(__file__).resolve().parents[1]
    grammar = (root / "compiler" / "grammar.lark").read_text().rstrip("\n")
    assert grammar in (root / "docs" / "language.md").read_text()
