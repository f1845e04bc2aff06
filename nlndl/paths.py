"""Path rules, counted: ``r(X, Y) :- p(X, A), q(A, B), s(B, Y)`` of up to three atoms, each read either way.

A rule's confidence is AnyBURL's and the baseline's: the known r pairs its body derives (correct) over the
pairs it derives (predicted), its body computed exactly as a product of the relations' 0/1 matrices; a path
of three atoms does not come back through its ends (B is not X, A is not Y: AnyBURL's object identity), and
X is not Y: what a body derives for X = Y is a reflexive rule ``r(X, X) :- ...`` counted apart. Which
paths to multiply out is found from the known pairs outwards, so that only paths joining some known pair
cost anything: every such path of two atoms, and of three atoms the ``THREE_ATOM_PATHS`` that join the most
of ``SAMPLE`` known pairs drawn with the seed, walked in a seeded order until ``MAX_JOINED`` paths have been
met (a graph of 237 relations has 106 million paths of three atoms; most join nothing, and most of the rest
join a pair or two). Rules are kept where they derive at least
``MIN_CORRECT`` known pairs, and a body that would derive more than ``MAX_DERIVED`` pairs is left out (its
confidence is near zero on any graph large enough to make it). Settings chosen on valid.txt of WN18RR and a
sample of FB15k-237's relations: more paths of three atoms changed neither's MRR, and took longer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from scipy import sparse

from nlndl.compiler.join import matched_ranges, ranges, run_starts, sorted_counts, sorted_join, sorted_unique
from nlndl.defaults import KG_PATH_LENGTH as LENGTH
from nlndl.pairs import entries, member, nonzero_keys, taken

SAMPLE = 2000  # known pairs per relation from which paths of three atoms are found
MAX_DERIVED = 4_000_000  # pairs past which a body is not kept
THREE_ATOM_PATHS = 300  # paths of three atoms counted per relation: those that join the most sampled pairs
MIN_CORRECT = 2  # known pairs a rule must derive to be kept (AnyBURL's default)
MAX_WALKS = 3_000_000  # two-step walks a pair may need to be walked while finding paths of three atoms
CHUNK_WALKS = 1_000_000  # two-step walks followed at once
DENSE_KEYS = 1 << 26  # (path, pair) keys of a chunk counted by a table of this many entries at most, else sorted
# paths met at the far end after which no further pair is walked (Kinship's relations meet 8 to 42 million
# from their pairs, FB15k-237's up to 12 million, WordNet's 0.1 million): on valid.txt, Kinship's counted
# rules ranked the same from a quarter of its pairs in half the time, the FB15k-237 sample and Family the same
MAX_JOINED = 4_000_000
# a graph of at most this many entities multiplies its bodies as dense arrays: on a small graph a sparse
# product costs its construction (a third of a millisecond) whatever its size, and a dense graph has a body
# for nearly every pair of atoms (14 entities and 55 relations: 12,000 per relation)
DENSE_ENTITIES = 128
DENSE_BYTES = 1 << 28  # and where every atom's array fits this many bytes together

Atom = tuple[str, bool]  # (relation, read backwards: p(Z, X) for p(X, Z))


@dataclass
class PathRule:
    """A counted path rule: its atoms in path order from X to Y, the pairs its body derives (as the rows and
    columns of their entries, row by row, each row's columns ascending: what the floor and the aggregates read
    of them), and its counts."""

    atoms: tuple[Atom, ...]
    rows: np.ndarray  # int64
    columns: np.ndarray  # int64
    shape: tuple[int, int]
    predicted: int
    correct: int
    reflexive: bool = False  # r(X, X) :- ...: the body's pairs (X, X) alone; otherwise its pairs with X not Y

    @property
    def keys(self) -> np.ndarray:
        """The pairs' keys, row * width + column, ascending."""
        return self.rows * self.shape[1] + self.columns

    @cached_property
    def pairs(self) -> sparse.csr_matrix:
        """The pairs as a 0/1 float32 CSR matrix, canonical (made when first read)."""
        indptr = np.zeros(self.shape[0] + 1, dtype=np.int32)
        np.cumsum(np.bincount(self.rows, minlength=self.shape[0]), out=indptr[1:])
        data = np.ones(self.columns.size, dtype=np.float32)
        return sparse.csr_matrix((data, self.columns.astype(np.int32), indptr), shape=self.shape)

    @property
    def confidence(self) -> float:
        return self.correct / self.predicted if self.predicted else 0.0

    def listed(self) -> PathRule:
        """The rule without its pairs: what a rule list writes of it (:meth:`text`, the counts), kept past the
        count at the cost of a few numbers."""
        none = np.zeros(0, dtype=np.int64)
        return replace(self, rows=none, columns=none)

    def restated(self, chains: set[tuple[Atom, ...]]) -> bool:
        """Whether a clause among ``chains`` (path clauses, :func:`nlndl.kg_rules.chains_of`) says what this rule says:
        the same path, from X to a different Y (a clause's own r(X, X) part is not told apart)."""
        return not self.reflexive and self.atoms in chains

    def text(self, target: str, arrow: str = " :- ") -> str:
        """``r(X,Y) :- p(X,A), q(B,A), s(B,Y)``: variables X and Y at the ends, A, B between (Y is X in a
        reflexive rule)."""
        names = ["X", *"ABCDEFGH"[: len(self.atoms) - 1], "X" if self.reflexive else "Y"]
        body = ", ".join(
            f"{p}({names[i + 1]},{names[i]})" if back else f"{p}({names[i]},{names[i + 1]})"
            for i, (p, back) in enumerate(self.atoms)
        )
        return f"{target}(X,{names[-1]}){arrow}{body}"


def boolean(matrix: sparse.spmatrix) -> sparse.csr_matrix:
    """The nonzero pattern of ``matrix`` as a 0/1 matrix (path counts of any size collapse to 1). Products are
    taken in float32, whose counts stay positive however many paths join a pair (int8 would wrap at 128)."""
    out = sparse.csr_matrix(matrix, dtype=np.float32, copy=True)
    out.sum_duplicates()  # each row's columns once, ascending: what every reader of a rule's pairs takes
    out.eliminate_zeros()
    out.data = np.ones(out.data.size, dtype=np.float32)
    return out


def split_diagonal(pairs: sparse.csr_matrix) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """``pairs`` as (those with X not Y, those with X = Y): a path rule's head variables are different
    entities (AnyBURL's object identity), and what a body says of X = Y is a reflexive rule of its own."""
    rows = np.repeat(np.arange(pairs.shape[0]), np.diff(pairs.indptr))
    nonzero = pairs.data != 0
    on = (pairs.indices == rows) & nonzero
    if not on.any():
        return pairs, sparse.csr_matrix(pairs.shape, dtype=pairs.dtype)
    return taken(pairs, rows, nonzero & ~on), taken(pairs, rows, on)


def dense_three_atoms(a: np.ndarray, b: np.ndarray, c: np.ndarray, ab: np.ndarray) -> np.ndarray:
    """:func:`three_atoms` of dense 0/1 arrays (float64, ``ab`` = a @ b): a boolean array."""
    back = np.diag(ab)[:, None] * c + a * (b * c.T).sum(axis=1)[None, :] - a * b.T * c
    return ab @ c - back > 0.5


def steps(a: sparse.csr_matrix, b: sparse.csr_matrix) -> int:
    """The multiply steps of ``a @ b``: a bound on the pairs it derives, from column and row counts."""
    columns = np.bincount(a.indices, minlength=a.shape[1]).astype(np.int64)
    return int(np.dot(columns, np.diff(b.indptr).astype(np.int64)))


def product(a: sparse.csr_matrix, b: sparse.csr_matrix) -> sparse.csr_matrix | None:
    """The 0/1 pattern of ``a @ b``, or None when it would take more than 4 x ``MAX_DERIVED`` multiply steps."""
    return boolean(a @ b) if steps(a, b) <= 4 * MAX_DERIVED else None


def paths_counted(a: sparse.csr_matrix, b: sparse.csr_matrix) -> sparse.csr_matrix | None:
    """``a @ b`` in float64: per pair, the number of paths joining it (exact), or None as :func:`product`."""
    return a.astype(np.float64) @ b.astype(np.float64) if steps(a, b) <= 4 * MAX_DERIVED else None


def three_atoms(
    a: sparse.csr_matrix, b: sparse.csr_matrix, c: sparse.csr_matrix, ab: sparse.csr_matrix
) -> sparse.csr_matrix | None:
    """The pairs (X, Y) joined by a path X -a-> A -b-> B -c-> Y that does not come back through an end: B is
    not X and A is not Y (AnyBURL's object identity). Without it, ``r(X, Y) :- p(X, A), p(B, A), r(B, Y)``
    would derive every known r(X, Y) through B = X, and its confidence would count them. ``ab``: the
    paths counted from a through b (:func:`paths_counted`). None past the limit of :func:`product`."""
    if steps(ab, c) > 4 * MAX_DERIVED:
        return None
    c64 = c.astype(np.float64)
    back = sparse.diags(ab.diagonal()) @ c64  # B = X
    back = back + a.astype(np.float64) @ sparse.diags(np.asarray(b.multiply(c.T).sum(axis=1)).ravel())  # A = Y
    back = back - a.multiply(b.T).multiply(c).astype(np.float64)  # both, taken away twice
    count = ab @ c64
    if back.nnz:  # the paths through an end, taken from the count in one pass over it
        count = count - back
    count = count.tocsr()
    count.sum_duplicates()  # canonical, as boolean leaves a product
    count.data = (count.data > 0.5).astype(np.float32)
    count.eliminate_zeros()
    return count


def atom_matrices(matrices: dict[str, sparse.csr_matrix]) -> list[tuple[Atom, sparse.csr_matrix]]:
    """Every relation read forwards and backwards, as (atom, 0/1 matrix), the two readings of a relation
    next to each other (index 2k and 2k + 1), relations in name order."""
    out = []
    for relation in sorted(matrices):
        m = matrices[relation]
        out += [((relation, False), m), ((relation, True), m.T.tocsr())]
    return out


class Edges:
    """Every atom's pairs as labelled edges (source, destination, atom index), with the edges leaving each
    entity found by a sorted index: both readings of every relation, so the edge set is its own reverse."""

    def __init__(self, atoms: list[sparse.csr_matrix], n: int) -> None:
        coo = [m.tocoo() for m in atoms]
        src = np.concatenate([c.row for c in coo]).astype(np.int64) if coo else np.zeros(0, np.int64)
        dst = np.concatenate([c.col for c in coo]).astype(np.int64) if coo else src
        label = np.concatenate([np.full(c.nnz, k, np.int64) for k, c in enumerate(coo)]) if coo else src
        order = np.argsort(src, kind="stable")
        self.src, self.dst, self.label = src[order], dst[order], label[order]
        self.start = np.searchsorted(self.src, np.arange(n + 1))  # edges leaving e: start[e]:start[e + 1]
        self.n, self.atoms = n, len(atoms)

    def leaving(self, entities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``entities``, edge) for every edge leaving each of ``entities``."""
        lo, hi = self.start[entities], self.start[entities + 1]
        count = hi - lo
        rows = np.repeat(np.arange(entities.size), count)
        before = np.cumsum(count) - count
        return rows, np.repeat(lo - before, count) + np.arange(int(count.sum()))

    def degree(self) -> np.ndarray:
        return np.diff(self.start)


def two_atom_paths(edges: Edges, heads: np.ndarray, tails: np.ndarray) -> set[tuple[int, int]]:
    """The paths (i, j), atom i then atom j, that join some pair (heads[k], tails[k])."""
    found: set[tuple[int, int]] = set()
    k = edges.atoms
    for start in range(0, heads.size, 4096):
        h, t = heads[start : start + 4096], tails[start : start + 4096]
        first_rows, first = edges.leaving(h)
        last_rows, last = edges.leaving(t)  # an edge leaving t read backwards enters it
        left = first_rows * edges.n + edges.dst[first]
        right = last_rows * edges.n + edges.dst[last]
        rows, matched = sorted_join(left, right, last)
        codes = sorted_unique(edges.label[first[rows]] * k + (edges.label[matched] ^ 1))
        found.update((int(c) // k, int(c) % k) for c in codes)
    return found


def paths_per_pair(keys: np.ndarray, paths: int, pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """(each path met, ascending; the distinct pairs it joins) from ``keys`` = path * pairs + pair, repeats
    included: by a table of every (path, pair) where it is at most ``DENSE_KEYS`` entries and the keys are not
    far fewer (a dense graph meets tens of millions of keys among a few million), else by a sort."""
    if paths * pairs <= min(DENSE_KEYS, 16 * keys.size):  # a table pays where the keys are many for its size
        seen = np.zeros(paths * pairs, dtype=bool)
        seen[keys] = True
        joins = np.count_nonzero(seen.reshape(paths, pairs), axis=1)
        met = np.flatnonzero(joins)
        return met, joins[met]
    return sorted_counts(sorted_unique(keys) // pairs)


def three_atom_paths(edges: Edges, heads: np.ndarray, tails: np.ndarray) -> dict[tuple[int, int, int], int]:
    """The paths (i, j, l) of three atoms that join some pair (heads[k], tails[k]), with the number of pairs
    each joins (:func:`joined_paths` as a dictionary)."""
    codes, many = joined_paths(edges, heads, tails)
    return dict(zip(decoded(codes, edges.atoms), many.tolist(), strict=True))


def most_joined(edges: Edges, heads: np.ndarray, tails: np.ndarray, count: int) -> list[tuple[int, int, int]]:
    """The ``count`` paths of three atoms that join the most of the pairs (ties: the first paths), in path order."""
    codes, many = joined_paths(edges, heads, tails)
    return decoded(np.sort(codes[np.lexsort((codes, -many))[:count]]), edges.atoms)


def decoded(codes: np.ndarray, k: int) -> list[tuple[int, int, int]]:
    """The paths (i, j, l) of :func:`joined_paths`' codes (i k + j) k + l."""
    return list(zip((codes // (k * k)).tolist(), (codes // k % k).tolist(), (codes % k).tolist(), strict=True))


def joined_paths(edges: Edges, heads: np.ndarray, tails: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The paths of three atoms that join some pair (heads[k], tails[k]), as codes (i k + j) k + l for atoms
    i, j, l of k, ascending, and the number of pairs each joins. Each pair is walked two steps from the end
    with the fewer two-step walks, then met with the edges at the other end, pairs in the order given until
    ``MAX_JOINED`` paths have been met; pairs needing more than ``MAX_WALKS`` walks are left out."""
    k = edges.atoms
    degree = edges.degree()
    two_steps = np.zeros(edges.n, np.int64)
    np.add.at(two_steps, edges.src, degree[edges.dst])
    backwards = two_steps[tails] < two_steps[heads]
    near = np.where(backwards, tails, heads)  # walked two steps from here
    far = np.where(backwards, heads, tails)
    cost = two_steps[near]
    keep = cost <= MAX_WALKS
    near, far, backwards, cost = near[keep], far[keep], backwards[keep], cost[keep]
    found: list[tuple[np.ndarray, np.ndarray]] = []  # per chunk, each path met and the pairs it joins there
    at = joined = 0
    while at < near.size and joined < MAX_JOINED:
        end = at + max(1, int(np.searchsorted(np.cumsum(cost[at:]), CHUNK_WALKS, "right")))
        pair = np.arange(at, end)
        first_rows, first = edges.leaving(near[pair])
        second_rows, second = edges.leaving(edges.dst[first])
        walk_pair = first_rows[second_rows]  # the pair each two-step walk belongs to
        last_rows, last = edges.leaving(far[pair])  # read backwards: the edges entering the far end
        left = walk_pair * edges.n + edges.dst[second]
        right = last_rows * edges.n + edges.dst[last]
        order, lo, count = matched_ranges(left, right)  # the join, its matches kept per walk
        far_label = edges.label[last[order]]
        joined += int(count.sum())
        # a path's key, ((a k + b) k + c) * pairs + pair for atoms a, b, c from X to Y, is a part per walk (its
        # two atoms, its pair) and a part per far edge: a walk from the tail (flip) reads the path in reverse,
        # (c, b, a) = (far edge, second ^ 1, first ^ 1); from the head, (a, b, c) = (first, second, far edge ^ 1)
        hit = np.flatnonzero(count)  # the walks that meet the far end (on a sparse graph, few of them)
        lo, count, walk_pair = lo[hit], count[hit], walk_pair[hit]
        a, b = edges.label[first[second_rows[hit]]], edges.label[second[hit]]
        flip = backwards[pair[walk_pair]]
        width = end - at  # the chunk's pairs: walk_pair is a pair's place among them
        walk = np.where(flip, (b ^ 1) * k + (a ^ 1), (a * k + b) * k) * width + walk_pair
        ends = (far_label ^ 1) * width, far_label * (k * k * width)  # from the head, from the tail
        if k**3 * width <= DENSE_KEYS:  # keys of 32 bits, the walks of each end taken apart (no per-key choice)
            walk, ends = walk.astype(np.int32), (ends[0].astype(np.int32), ends[1].astype(np.int32))
            keys, filled = np.empty(int(count.sum()), np.int32), 0
            for side, chosen in ((0, ~flip), (1, flip)):
                many = count[chosen]
                part = keys[filled : filled + int(many.sum())]
                np.add(np.repeat(walk[chosen], many), ends[side][ranges(lo[chosen], many)], out=part)
                filled += part.size
        else:
            matched = ranges(lo, count)
            keys = np.repeat(walk, count)
            keys += np.where(np.repeat(flip, count), ends[1][matched], ends[0][matched])
        found.append(paths_per_pair(keys, k**3, width))
        at = end
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    codes = np.concatenate([c for c, _ in found]).astype(np.int64)
    many = np.concatenate([m for _, m in found]).astype(np.int64)
    order = np.argsort(codes, kind="stable")
    codes, many = codes[order], many[order]
    starts = run_starts(codes)
    return codes[starts], np.add.reduceat(many, starts)


def each(
    matrices: dict[str, sparse.csr_matrix],
    target: str,
    length: int = LENGTH,
    seed: int = 0,
    min_correct: int = MIN_CORRECT,
) -> Iterator[PathRule]:
    """The path rules of up to ``length`` atoms (1 to 3) for ``target`` over the relations' known pairs
    (``matrices``: relation -> entities x entities 0/1) that derive ``min_correct`` known pairs at least, one
    at a time (a caller that aggregates them need not hold every body at once). Each body gives up to two
    rules: what it derives for X not Y, and for X = Y (a reflexive rule ``r(X, X) :- ...``), each kept on
    its own counts. ``r(X, Y) :- r(X, Y)`` and ``r(X, X) :- r(X, X)`` are left out: they derive only what is
    known."""
    if not 1 <= length <= 3:
        raise ValueError(f"path length must be 1 to 3, not {length}")
    known = matrices[target]
    n = known.shape[0]
    known_keys = nonzero_keys(known)
    atoms = atom_matrices(matrices)
    mats = [m for _, m in atoms]

    def rules(path: tuple[int, ...], body: sparse.csr_matrix | None) -> list[PathRule]:
        if body is None or not body.nnz or body.nnz > MAX_DERIVED:
            return []
        out = []
        for reflexive, part in enumerate(split_diagonal(body)):
            if reflexive and path == (own_backwards,):
                continue  # r(X, X) :- r(X, X)
            rows, columns = entries(part)  # every entry nonzero: split_diagonal keeps no others
            correct = int(member(rows * n + columns, known_keys).sum())
            if correct >= min_correct:
                atoms_of = tuple(atoms[i][0] for i in path)
                rule = PathRule(atoms_of, rows, columns, part.shape, rows.size, correct, bool(reflexive))
                rule.__dict__["pairs"] = part  # the matrix made already, as PathRule.pairs would make it
                out.append(rule)
        return out

    def dense_rules(path: tuple[int, ...], body: np.ndarray) -> list[PathRule]:
        """:func:`rules` of a body given as a boolean array (the same rules, pairs and counts)."""
        if not body.any():
            return []
        out = []
        for reflexive, part in enumerate((body & ~diagonal, body & diagonal)):
            if reflexive and path == (own_backwards,):
                continue
            correct = int(np.count_nonzero(part & known_dense))
            if correct >= min_correct:
                rows, columns = np.nonzero(part)  # row by row, columns ascending
                atoms_of = tuple(atoms[i][0] for i in path)
                out.append(PathRule(atoms_of, rows, columns, part.shape, rows.size, correct, bool(reflexive)))
        return out

    own_backwards = [atom for atom, _ in atoms].index((target, True))
    # dense where no body can reach the limits on its pairs or its multiply steps (at most n^2 and n^3)
    dense = (
        n <= DENSE_ENTITIES
        and len(mats) * n * n * 8 <= DENSE_BYTES
        and n * n <= MAX_DERIVED
        and n**3 <= 4 * MAX_DERIVED
    )
    if dense:
        arrays = [m.toarray().astype(np.float64) for m in mats]
        known_dense, diagonal = known.toarray() != 0, np.eye(n, dtype=bool)
        found = [dense_rules((i,), arrays[i] != 0) for i, (atom, _) in enumerate(atoms) if atom != (target, False)]
    else:
        found = [rules((i,), boolean(m)) for i, (atom, m) in enumerate(atoms) if atom != (target, False)]
    yield from (r for rs in found for r in rs)
    if length < 2:
        return
    edges = Edges(mats, n)
    heads, tails = (np.asarray(x, np.int64) for x in known.nonzero())
    for i, j in sorted(two_atom_paths(edges, heads, tails)):
        if dense:
            yield from dense_rules((i, j), arrays[i] @ arrays[j] > 0.5)
        else:
            yield from rules((i, j), product(mats[i], mats[j]))
    if length < 3:
        return
    rng = np.random.default_rng(seed)
    if heads.size > SAMPLE:
        drawn = np.sort(rng.choice(heads.size, SAMPLE, replace=False))
        heads, tails = heads[drawn], tails[drawn]
    order = rng.permutation(heads.size)  # walked in this order, so that pairs left out are left out at random
    heads, tails = heads[order], tails[order]
    prefix: tuple[tuple[int, int], sparse.csr_matrix | np.ndarray | None] = ((-1, -1), None)
    for i, j, m in most_joined(edges, heads, tails, THREE_ATOM_PATHS):
        if dense:
            if prefix[0] != (i, j):
                prefix = ((i, j), arrays[i] @ arrays[j])
            yield from dense_rules((i, j, m), dense_three_atoms(arrays[i], arrays[j], arrays[m], prefix[1]))
            continue
        if prefix[0] != (i, j):  # paths come sorted: one prefix held at a time
            prefix = ((i, j), paths_counted(mats[i], mats[j]))
        ab = prefix[1]
        if ab is not None:
            yield from rules((i, j, m), three_atoms(mats[i], mats[j], mats[m], ab))
