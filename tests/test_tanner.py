"""Tanner graphs: generation, reading, GF(2) rank and the edge index arrays."""

import itertools

import numpy as np
import pytest
from typer.testing import CliRunner

from nlndl.cli import app
from nlndl.compiler.tanner import MatrixError, TannerGraph, four_cycles, generate_regular, gf2_rank, read_matrix

HAMMING = np.array([[1, 1, 0, 1, 1, 0, 0], [1, 0, 1, 1, 0, 1, 0], [0, 1, 1, 1, 0, 0, 1]], dtype=np.uint8)


def test_gf2_rank():
    assert gf2_rank(HAMMING) == 3
    assert gf2_rank(np.vstack([HAMMING, HAMMING[0] ^ HAMMING[1]])) == 3
    assert gf2_rank(np.zeros((2, 3), dtype=np.uint8)) == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_regular_code(seed):
    h = generate_regular(48, 3, 6, seed)
    assert h.shape == (24, 48) and set(np.unique(h)) <= {0, 1}
    assert (h.sum(0) == 3).all() and (h.sum(1) == 6).all()
    assert four_cycles(h) == 0
    assert np.array_equal(h, generate_regular(48, 3, 6, seed)), "seeded"
    with pytest.raises(ValueError):
        generate_regular(48, 3, 7)


@pytest.mark.parametrize(("n", "dv", "dc"), [(48, 4, 8), (100, 5, 10)])
def test_generated_code_of_larger_degrees(n, dv, dc):
    """Almost every configuration-model draw of these has a repeated edge: the generator repairs one. Their
    4-cycles cannot all be swapped away at these lengths, so the swaps run to their bound: 500 of them keep
    the degrees as the default 20,000 do, in a fortieth of the time."""
    h = generate_regular(n, dv, dc, 0, swaps=500)
    assert set(np.unique(h)) <= {0, 1}, "no repeated edge"
    assert (h.sum(0) == dv).all() and (h.sum(1) == dc).all()
    assert four_cycles(h) < four_cycles(generate_regular(n, dv, dc, 0, swaps=0)), "the swaps remove 4-cycles"
    assert np.array_equal(h, generate_regular(n, dv, dc, 0, swaps=500)), "seeded"


def test_four_cycle_count():
    h = np.array([[1, 1, 0], [1, 1, 1]], dtype=np.uint8)
    assert four_cycles(h) == 1


def test_edge_arrays_and_extrinsic_lists():
    graph = TannerGraph.from_matrix(HAMMING)
    a = graph.arrays
    m, n = HAMMING.shape
    edges = list(zip(a["edge_check"].tolist(), a["edge_var"].tolist(), strict=True))
    assert sorted(edges) == edges and set(edges) == {tuple(x) for x in np.argwhere(HAMMING)}
    for c in range(m):
        span = range(a["check_ptr"][c], a["check_ptr"][c + 1])
        assert all(edges[e][0] == c for e in span) and len(span) == HAMMING[c].sum()
    for v in range(n):
        members = a["var_order"][a["var_ptr"][v] : a["var_ptr"][v + 1]]
        assert sorted(edges[e][1] for e in members) == [v] * HAMMING[:, v].sum()
    for e, (c, v) in enumerate(edges):
        at_check = a["check_extrinsic"][a["check_extrinsic_ptr"][e] : a["check_extrinsic_ptr"][e + 1]]
        assert sorted(at_check) == [o for o, (c2, _) in enumerate(edges) if c2 == c and o != e]
        at_var = a["var_extrinsic"][a["var_extrinsic_ptr"][e] : a["var_extrinsic_ptr"][e + 1]]
        assert sorted(at_var) == [o for o, (_, v2) in enumerate(edges) if v2 == v and o != e]
    assert graph.meta["rank"] == 3 and graph.meta["n"] == 7


def test_read_matrix_and_alist(tmp_path):
    text = tmp_path / "h.txt"
    text.write_text("\n".join(" ".join(map(str, r)) for r in HAMMING) + "\n")
    assert np.array_equal(read_matrix(text), HAMMING)
    cols = [np.flatnonzero(HAMMING[:, j]) + 1 for j in range(7)]
    rows = [np.flatnonzero(HAMMING[i]) + 1 for i in range(3)]
    lines = [
        "7 3",
        f"{max(map(len, cols))} {max(map(len, rows))}",
        " ".join(str(len(c)) for c in cols),
        " ".join(str(len(r)) for r in rows),
    ]
    lines += [" ".join(map(str, c)) for c in cols] + [" ".join(map(str, r)) for r in rows]
    alist = tmp_path / "h.alist"
    alist.write_text("\n".join(lines) + "\n")
    assert np.array_equal(read_matrix(alist), HAMMING)
    bad = tmp_path / "bad.txt"
    bad.write_text("1 0 1\n0 2 1\n")
    with pytest.raises(MatrixError, match=r"bad.txt:2:3: error: expected 0 or 1"):
        read_matrix(bad)


def test_save_load(tmp_path):
    graph = TannerGraph.from_matrix(generate_regular(48, 3, 6, 0), seed=0)
    graph.save(tmp_path / "g")
    back = TannerGraph.load(tmp_path / "g")
    assert back.meta == graph.meta and np.array_equal(back.h, graph.h)
    for key, value in graph.arrays.items():
        assert np.array_equal(back.arrays[key], value)


def test_cli_ldpc_compile(tmp_path):
    import json

    runner = CliRunner()
    result = runner.invoke(app, ["ldpc", "compile", "--generate", "48,3,6", "--json", "-o", str(tmp_path / "g")])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["n"] == 48 and summary["rank"] == 24 and summary["bytes"] > 0
    assert runner.invoke(app, ["ldpc", "compile"]).exit_code == 2
    assert runner.invoke(app, ["ldpc", "compile", "--generate", "48,3,7"]).exit_code == 2


def test_every_codeword_satisfies_small_code():
    # the null space of the Hamming matrix has 2^(7-3) words; each passes every check
    words = [w for w in itertools.product([0, 1], repeat=7) if not (HAMMING @ np.array(w) % 2).any()]
    assert len(words) == 2 ** (7 - gf2_rank(HAMMING))
