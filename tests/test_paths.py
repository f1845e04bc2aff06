"""Counted path rules (nlndl.paths) against a brute-force enumeration of every path of up to three atoms."""

import itertools

import numpy as np
import pytest
from scipy import sparse

import nlndl.pairs
from nlndl import paths


def graph(seed: int, n: int = 16) -> dict[str, sparse.csr_matrix]:
    """Four random relations; their diagonals are denser, so that reflexive rules are found and counted."""
    rng = np.random.default_rng(seed)
    loops = np.eye(n, dtype=bool)
    return {
        r: sparse.csr_matrix(((rng.random((n, n)) < 0.08) | (loops & (rng.random((n, n)) < 0.3))).astype(np.float32))
        for r in ("a", "b", "r", "s")
    }


def body(mats: list[np.ndarray]) -> np.ndarray:
    """Every grounding enumerated: for three atoms X -a-> A -b-> B -c-> Y, those with B != X and A != Y."""
    if len(mats) < 3:
        return np.linalg.multi_dot([*mats, np.eye(len(mats[0]))]) > 0
    a, b, c = mats
    n = len(a)
    grounding = a[:, :, None, None] * b[None, :, :, None] * c[None, None, :, :]  # x, a, b, y
    grounding *= (1 - np.eye(n))[:, None, :, None]  # B != X
    grounding *= (1 - np.eye(n))[None, :, None, :]  # A != Y
    return grounding.sum(axis=(1, 2)) > 0


def brute(matrices: dict[str, sparse.csr_matrix], target: str, min_correct: int) -> dict:
    """Per (path, reflexive), the pairs its body derives with X not Y (or X = Y) and the known ones among them."""
    atoms = [(atom, m.toarray()) for atom, m in paths.atom_matrices(matrices)]
    known = matrices[target].toarray() > 0
    out = {}
    for length in (1, 2, 3):
        for combo in itertools.product(range(len(atoms)), repeat=length):
            if length == 1 and atoms[combo[0]][0] == (target, False):
                continue
            derived = body([atoms[k][1] for k in combo])
            same = np.eye(len(known), dtype=bool)
            for reflexive, part in ((False, derived & ~same), (True, derived & same)):
                if reflexive and length == 1 and atoms[combo[0]][0] == (target, True):
                    continue  # r(X, X) :- r(X, X)
                correct = int((part & known).sum())
                if correct >= min_correct:
                    out[(tuple(atoms[k][0] for k in combo), reflexive)] = (int(part.sum()), correct)
    return out


@pytest.fixture
def every_path(monkeypatch):
    monkeypatch.setattr(paths, "THREE_ATOM_PATHS", 10**6)


@pytest.mark.parametrize("multiplied", ["dense", "sparse"])
@pytest.mark.parametrize("seed", range(4))
def test_every_path_of_up_to_three_atoms_is_found_and_counted(seed, multiplied, every_path, monkeypatch):
    if multiplied == "sparse":
        monkeypatch.setattr(paths, "DENSE_ENTITIES", 0)
    matrices = graph(seed)
    for min_correct in (1, 2):
        got = {
            (r.atoms, r.reflexive): (r.predicted, r.correct)
            for r in paths.each(matrices, "r", 3, min_correct=min_correct)
        }
        assert got == brute(matrices, "r", min_correct)
        assert any(len(atoms) == 3 for atoms, _ in got)
        assert any(reflexive for _, reflexive in got) and any(not reflexive for _, reflexive in got)


def test_a_sample_of_the_known_pairs_finds_the_paths_that_join_them(monkeypatch, every_path):
    matrices = graph(7, n=24)
    monkeypatch.setattr(paths, "SAMPLE", 4)
    sampled = {(r.atoms, r.reflexive): (r.predicted, r.correct) for r in paths.each(matrices, "r", 3, min_correct=1)}
    every = brute(matrices, "r", 1)
    assert all(every[atoms] == counts for atoms, counts in sampled.items())  # counted exactly, not estimated
    assert len([a for a, _ in sampled if len(a) == 3]) < len([a for a, _ in every if len(a) == 3])
    shorter = {a: c for a, c in every.items() if len(a[0]) < 3}
    assert shorter == {a: c for a, c in sampled.items() if len(a[0]) < 3}  # not sampled


def test_a_path_found_from_either_end_is_the_same_rule(every_path):
    """Walks start from the end with fewer two-step walks; a hub at the head makes them start at the tail."""
    n = 12
    edges = {"p": [(0, k) for k in range(1, 10)], "q": [(k, 10) for k in range(1, 10)], "s": [(10, 11)]}
    edges["r"] = [(0, 11)]
    matrices = {
        name: sparse.csr_matrix((np.ones(len(e), np.float32), tuple(np.array(e).T)), shape=(n, n))
        for name, e in edges.items()
    }
    got = {(r.atoms, r.reflexive) for r in paths.each(matrices, "r", 3, min_correct=1)}
    assert ((("p", False), ("q", False), ("s", False)), False) in got
    assert got == set(brute(matrices, "r", 1))


def test_the_rule_text_names_the_path():
    none = np.zeros(0, np.int64)
    rule = paths.PathRule((("p", False), ("q", True), ("s", False)), none, none, (2, 2), 4, 1)
    assert rule.text("r") == "r(X,Y) :- p(X,A), q(B,A), s(B,Y)" and rule.confidence == 0.25
    reflexive = paths.PathRule((("p", False), ("q", True)), none, none, (2, 2), 4, 1, reflexive=True)
    assert reflexive.text("r", " <= ") == "r(X,X) <= p(X,A), q(X,A)"


def test_a_body_s_pairs_x_x_are_a_reflexive_rule_of_their_own():
    """r(X, Y) :- s(X, Y) with X not Y (object identity), and r(X, X) :- s(X, X) counted apart: a campus is its
    own institution, and the pairs of two different entities say nothing of that."""
    n = 6
    s = np.eye(n, dtype=np.float32)
    s[0, 1] = s[2, 3] = s[4, 5] = 1
    r = np.diag([1, 1, 1, 0, 0, 0]).astype(np.float32)
    r[0, 1] = 1
    matrices = {"r": sparse.csr_matrix(r), "s": sparse.csr_matrix(s)}
    got = {
        rule.reflexive: rule for rule in paths.each(matrices, "r", 1, min_correct=1) if rule.atoms == (("s", False),)
    }
    assert (got[False].predicted, got[False].correct) == (3, 1)
    assert (got[True].predicted, got[True].correct) == (6, 3)
    assert got[True].text("r") == "r(X,X) :- s(X,X)"
    assert not (got[True].pairs.toarray() - np.eye(n) * (got[True].pairs.toarray() > 0)).any()


def test_a_body_past_the_limit_is_left_out(monkeypatch):
    matrices = graph(2)
    monkeypatch.setattr(paths, "MAX_DERIVED", 3)
    assert all(r.predicted <= 3 for r in paths.each(matrices, "r", 3, min_correct=1))


def test_the_paths_of_three_atoms_counted_are_those_joining_the_most_pairs(monkeypatch, every_path):
    matrices = graph(5)
    heads, tails = (np.asarray(x, np.int64) for x in matrices["r"].nonzero())
    joined = paths.three_atom_paths(paths.Edges([m for _, m in paths.atom_matrices(matrices)], 16), heads, tails)
    atoms = [a for a, _ in paths.atom_matrices(matrices)]
    monkeypatch.setattr(paths, "THREE_ATOM_PATHS", 20)
    kept = {r.atoms for r in paths.each(matrices, "r", 3, min_correct=1) if len(r.atoms) == 3}
    cut = sorted(joined.values(), reverse=True)[19]
    assert kept and len(kept) <= 20
    assert all(joined[tuple(atoms.index(a) for a in path)] >= cut for path in kept)


def test_paths_of_three_atoms_stop_being_walked_after_max_joined(monkeypatch):
    """The counts do not depend on the order the pairs are walked in; past MAX_JOINED paths met, no further
    pair is walked (one pair per chunk here: the counts are then the first pair's alone)."""
    matrices = graph(5)
    heads, tails = (np.asarray(x, np.int64) for x in matrices["r"].nonzero())
    edges = paths.Edges([m for _, m in paths.atom_matrices(matrices)], 16)
    whole = paths.three_atom_paths(edges, heads, tails)
    order = np.random.default_rng(1).permutation(heads.size)
    assert paths.three_atom_paths(edges, heads[order], tails[order]) == whole
    first = next(i for i in range(heads.size) if paths.three_atom_paths(edges, heads[i : i + 1], tails[i : i + 1]))
    heads, tails = heads[first:], tails[first:]
    monkeypatch.setattr(paths, "CHUNK_WALKS", 1)
    monkeypatch.setattr(paths, "MAX_JOINED", 1)
    alone = paths.three_atom_paths(edges, heads[:1], tails[:1])
    assert paths.three_atom_paths(edges, heads, tails) == alone
    assert sum(alone.values()) < sum(whole.values())


def test_paths_met_are_counted_alike_by_a_table_and_by_a_sort(monkeypatch):
    """A dense graph's chunks count (path, pair) keys in a table, a sparse one's by a sort: the same counts."""
    matrices = graph(5)
    heads, tails = (np.asarray(x, np.int64) for x in matrices["r"].nonzero())
    edges = paths.Edges([m for _, m in paths.atom_matrices(matrices)], 16)
    tabled = paths.three_atom_paths(edges, heads, tails)
    monkeypatch.setattr(paths, "DENSE_KEYS", 0)
    assert paths.three_atom_paths(edges, heads, tails) == tabled and tabled
    rng = np.random.default_rng(0)
    for size in (10, 5_000):  # few keys for the table's size (sorted) and many (tabled)
        keys = rng.integers(0, 40 * 7, size)
        monkeypatch.setattr(paths, "DENSE_KEYS", 1 << 26)
        met, joins = paths.paths_per_pair(keys, 40, 7)
        distinct = np.unique(keys)
        expected = np.unique(distinct // 7, return_counts=True)
        assert np.array_equal(met, expected[0]) and np.array_equal(joins, expected[1])


@pytest.mark.parametrize("seed", [0, 5])
def test_a_small_graph_s_dense_products_give_the_sparse_products_rules(seed, every_path, monkeypatch):
    """Below DENSE_ENTITIES the bodies are multiplied as arrays: every rule, its counts and its pairs (as a
    canonical float32 CSR matrix) the same as by sparse products, in the same order."""
    matrices = graph(seed)

    def rules() -> list[tuple]:
        out = []
        for r in paths.each(matrices, "r", 3, min_correct=1):
            assert r.pairs.has_canonical_format and r.pairs.dtype == np.float32
            assert np.array_equal(r.keys, nlndl.pairs.nonzero_keys(r.pairs)) and r.predicted == r.keys.size
            out.append(
                (r.atoms, r.reflexive, r.predicted, r.correct, r.pairs.indptr.tolist(), r.pairs.indices.tolist())
            )
        return out

    dense = rules()
    monkeypatch.setattr(paths, "DENSE_ENTITIES", 0)
    assert rules() == dense
    assert any(len(rule[0]) == 3 for rule in dense) and any(rule[1] for rule in dense)


def test_the_most_joined_paths_of_three_atoms_are_the_first_by_count_then_by_path():
    matrices = graph(5)
    heads, tails = (np.asarray(x, np.int64) for x in matrices["r"].nonzero())
    edges = paths.Edges([m for _, m in paths.atom_matrices(matrices)], 16)
    joined = paths.three_atom_paths(edges, heads, tails)
    for count in (1, 20, 10**6):
        expected = sorted(sorted(joined, key=lambda key: (-joined[key], key))[:count])
        assert paths.most_joined(edges, heads, tails, count) == expected
