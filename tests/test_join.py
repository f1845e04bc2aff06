"""Kept substitutions by joins equal the grid walk's, on every bundled sketch and on random programs
(subtypes, repeated variables, several extra variables, demanded heads only, prune=path)."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nlndl.compiler.lowering as lowering
from nlndl.compiler import compile_sketch

ROOT = Path(__file__).resolve().parents[1]
SKETCHES = sorted((ROOT / "examples" / "ilp").rglob("sketch.dl"))


@pytest.fixture
def compared(monkeypatch):
    """Every kept() call also walks the grid; yields the (predicate, method, joined == walked) seen."""
    seen = []
    real = lowering.Lowering.kept

    def both(self, heads=None, memory_limit=2**62):
        joined = real(self, heads, memory_limit)
        seen.append((self.spec.predicate, self.method, np.array_equal(joined, self.walk(heads))))
        return joined

    monkeypatch.setattr(lowering.Lowering, "kept", both)
    return seen


@pytest.mark.parametrize("sketch", SKETCHES, ids=[str(s.parent.relative_to(ROOT / "examples")) for s in SKETCHES])
def test_bundled_sketches_keep_the_same_substitutions(sketch, compared):
    compile_sketch(sketch)
    assert compared and all(same for _, _, same in compared), compared


@st.composite
def programs(draw):
    constants = [f"c{i}" for i in range(draw(st.integers(2, 6)))]
    small = constants[: draw(st.integers(1, len(constants)))]
    lines = [".type T <: symbol", ".type S <: T"]
    relations = {}
    for name in ("e", "f", "g")[: draw(st.integers(1, 3))]:
        types = draw(st.lists(st.sampled_from(["T", "S"]), min_size=1, max_size=3))
        relations[name] = types
        lines.append(f".decl {name}({', '.join(f'a{i}: {t}' for i, t in enumerate(types))})")
        for _ in range(draw(st.integers(0, 8))):
            args = [draw(st.sampled_from(small if t == "S" else constants)) for t in types]
            lines.append(f"{name}({', '.join(args)}).")
    for c in small:  # every S constant is in S's domain
        lines.append(f's_member("{c}").')
    lines.insert(2, ".decl s_member(a: S)")
    head_types = draw(st.lists(st.sampled_from(["T", "S"]), min_size=1, max_size=2))
    extra = draw(st.lists(st.sampled_from(["T", "S"]), min_size=1, max_size=2))
    lines.append(f".decl p({', '.join(f'a{i}: {t}' for i, t in enumerate(head_types))})")
    body = ", ".join([*relations, *(["p"] if draw(st.booleans()) else [])])  # reading p: every head, no demand
    prune = draw(st.sampled_from(["extensional", "path"]))
    lines.append(
        f".learn p(vars={len(head_types) + len(extra)}, types=[{', '.join(extra)}], body=[{body}], "
        f"prune={prune}, invented)"
    )
    if draw(st.booleans()):
        args = [draw(st.sampled_from(small if t == "S" else constants)) for t in head_types]
        lines.append(f".pos p({', '.join(args)}).")
    if draw(st.booleans()):  # a second learned predicate: its example slots are demanded too, not p's
        lines += [".decl q(a: T)", f".learn q(vars=2, types=[T], body=[{', '.join(relations)}], prune=extensional)"]
        lines.append(f".pos q({draw(st.sampled_from(constants))}).")
    return "\n".join(lines) + "\n"


@settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=programs())
def test_random_programs_keep_the_same_substitutions(text, tmp_path, compared):
    compared.clear()
    path = tmp_path / "s.dl"
    path.write_text(text)
    compile_sketch(path)
    assert all(same for _, _, same in compared), text
    assert any(method == "join" for _, method, _ in compared)


def test_bench_scale_forest_and_compile_figures(tmp_path):
    from typer.testing import CliRunner

    from nlndl.bench.scale import forest
    from nlndl.cli import app

    sketch, facts, positives = forest(30, seed=1)
    assert facts.count("\n") == 29 and sketch.count(".pos ancestor") == positives >= 29
    out = tmp_path / "scale.json"
    result = CliRunner().invoke(app, ["bench", "scale", "--sizes", "20,40", "--no-train", "--json", str(out), "-q"])
    assert result.exit_code == 0, result.output
    import json

    rows = json.loads(out.read_text())["rows"]
    assert [r["n"] for r in rows] == [20, 40]
    assert all(0 < r["substitutions"] < r["grid"] and r["compile_rss"] > 0 for r in rows)


@pytest.mark.parametrize(("prune", "kept"), [("extensional", 3), ("path", 2)])
def test_path_pruning_keeps_only_values_joined_to_both_ends(prune, kept, tmp_path, compared):
    """p(a, c) over e(a, b), e(b, c), e(a, d): C = b joins a and c; C = d joins only a, kept by the extensional
    rule, not by prune=path; the first constant (a) binds always."""
    path = tmp_path / "s.dl"
    path.write_text(
        ".decl e(x: symbol, y: symbol)\ne(a, b).\ne(b, c).\ne(a, d).\n.decl p(x: symbol, y: symbol)\n"
        f".learn p(vars=3, body=[e], prune={prune})\n.pos p(a, c).\n"
    )
    program = compile_sketch(path)
    assert program.worlds[0].substitutions["p"] == kept
    assert compared and all(same for _, _, same in compared)


def test_path_pruning_with_two_extra_variables_keeps_the_paths_of_three_edges(tmp_path, compared):
    """p(a, d) over the chain a-b-c-d and a spur a-x: under prune=path each extra variable joins two others, so
    (C, D) = (b, c) is kept, and nothing with x (joined to a alone); the first constant (a) binds always."""
    path = tmp_path / "s.dl"
    path.write_text(
        ".decl e(x: symbol, y: symbol)\ne(a, b).\ne(b, c).\ne(c, d).\ne(a, x).\n.decl p(x: symbol, y: symbol)\n"
        ".learn p(vars=4, body=[e], prune=path)\n.pos p(a, d).\n"
    )
    compile_sketch(path)
    assert compared and all(same for _, _, same in compared)
    program = compile_sketch(path)
    kept = program.worlds[0].substitutions["p"]
    path.write_text(path.read_text().replace("prune=path", "prune=extensional"))
    assert kept < compile_sketch(path).worlds[0].substitutions["p"]


def test_sorted_counts_are_np_uniques():
    from nlndl.compiler.join import sorted_counts, sorted_unique

    rng = np.random.default_rng(2)
    for size in (0, 1, 1000):
        keys = rng.integers(0, 50, size)
        want, counts = np.unique(keys, return_counts=True)
        got, got_counts = sorted_counts(keys)
        assert got.tolist() == want.tolist() and got_counts.tolist() == counts.tolist()
        assert sorted_unique(keys).tolist() == want.tolist()


def hubs(prune: str) -> str:
    """p(h_i, h_i+1) over hubs of 101 edges each, joined through one middle node m_i: the candidates of the third
    variable are the hubs' neighbours (about 200 per head atom), prune=path keeps m_i and the first constant."""
    lines = [".decl e(x: symbol, y: symbol)"]
    for i in range(21):
        lines += [f"e(h{i}, l{i}_{j})." for j in range(100)] + [f"e(h{i}, m{i}).", f"e(m{i}, h{i + 1})."]
    lines += [".decl p(x: symbol, y: symbol)", f".learn p(vars=3, body=[e], prune={prune})"]
    return "\n".join(lines + [f".pos p(h{i}, h{i + 1})." for i in range(20)]) + "\n"


@pytest.mark.parametrize("prune", ["path", "extensional"])
def test_path_pruning_joins_candidates_past_the_memory_limit_a_block_of_rows_at_a_time(prune, tmp_path, monkeypatch):
    """Under prune=path the candidates (4,099 here) may pass the memory limit when what is kept (40) does not:
    they are joined in blocks of rows, to the same substitutions; without the pruning, the kept are the
    candidates, and the join is refused with its estimate."""
    import nlndl.compiler.join as join

    real, seen, blocks = lowering.Lowering.kept, {}, []
    real_blocks = join._blocks

    def both(self, heads=None, memory_limit=2**62):
        whole = real(self, heads, memory_limit)
        seen["walk"], seen["whole"] = self.walk(heads), whole
        try:
            seen["small"] = real(self, heads, 100_000)
        except join.JoinTooLarge as exc:
            seen["small"] = exc
        return whole

    monkeypatch.setattr(lowering.Lowering, "kept", both)
    monkeypatch.setattr(join, "_blocks", lambda *args: blocks.append(real_blocks(*args)) or blocks[-1])
    path = tmp_path / "s.dl"
    path.write_text(hubs(prune))
    compile_sketch(path)
    assert np.array_equal(seen["whole"], seen["walk"])
    if prune == "path":
        assert seen["whole"].size == 40
        assert np.array_equal(seen["small"], seen["whole"])
        assert [len(b) for b in blocks] == [1, 5]
    else:
        assert seen["whole"].size == 4_079
        assert isinstance(seen["small"], join.JoinTooLarge)
        assert "4,099 candidate bindings of variable 2" in seen["small"].args[-1]
