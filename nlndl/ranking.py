"""Ranking entities with rules, and the knowledge-graph completion metrics: filtered MRR and Hits@k.

The protocol of the rule-learning literature (Neural LP and its successors): each test triple r(h, t) is
asked in both directions, r(h, ?) and r(?, t); every entity is a candidate, scored by the rules that derive
it (by default the best confidence among them raised by the next few's, :func:`combined`; 0 where none
does); candidates of equal score are
ordered by how often they answer the relation in the known triples (the rules without a body); candidates
that are other known true triples are removed (filtered); the rank of the answer among the rest counts tied
candidates at the mean rank of the tied group, so that an answer tied with many others is not ranked first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from nlndl import cardinality
from nlndl.compiler.join import run_starts, sorted_unique
from nlndl.pairs import canonical, entries, member, nonzero_keys, taken

Pairs = sparse.csr_matrix  # (entities, entities) 0/1: which (head, tail) pairs a rule body derives


@dataclass
class Metrics:
    mrr: float
    hits1: float
    hits3: float
    hits10: float
    queries: int

    def to_json(self) -> dict:
        return {
            "mrr": self.mrr,
            "hits@1": self.hits1,
            "hits@3": self.hits3,
            "hits@10": self.hits10,
            "queries": self.queries,
        }


def metrics(ranks: np.ndarray) -> Metrics:
    """MRR and Hits@k of (mean-tie) ranks, 1 the best."""
    ranks = np.asarray(ranks, dtype=np.float64)
    if not ranks.size:
        return Metrics(0.0, 0.0, 0.0, 0.0, 0)
    return Metrics(
        float(np.mean(1.0 / ranks)),
        float(np.mean(ranks <= 1)),
        float(np.mean(ranks <= 3)),
        float(np.mean(ranks <= 10)),
        int(ranks.size),
    )


def mean_rank(scores: np.ndarray, answer: int, filtered: np.ndarray, prior: np.ndarray | None = None) -> float:
    """Rank of ``answer`` among ``scores`` (higher is better), the ``filtered`` candidates left out, ties
    counted at the mean rank of the tied group. With a ``prior``, candidates of equal score are ordered by it
    (lexicographically: it never overrides a score), and only those equal in both are tied."""
    keep = np.ones(scores.size, dtype=bool)
    keep[filtered] = False
    keep[answer] = True
    own = scores[answer]
    kept = scores[keep]
    if prior is None:
        better = int(np.count_nonzero(kept > own))
        tied = int(np.count_nonzero(kept == own))  # the answer among them
        return better + (tied + 1) / 2
    rest, mine = prior[keep], prior[answer]
    same = kept == own
    better = int(np.count_nonzero(kept > own)) + int(np.count_nonzero(same & (rest > mine)))
    tied = int(np.count_nonzero(same & (rest == mine)))
    return better + (tied + 1) / 2


class Ranker:
    """:func:`mean_rank` of a query from its scored candidates alone (every other entity scores 0), without
    a row of every entity: the unscored are counted by the ``prior`` sorted once, not compared one by one."""

    def __init__(self, size: int, prior: np.ndarray | None = None) -> None:
        self.size = size
        self.prior = prior
        self.ordered = np.sort(prior) if prior is not None else None

    def rank(self, candidates: np.ndarray, scores: np.ndarray, answer: int, filtered: np.ndarray) -> float:
        """``candidates`` (distinct, ascending) scoring ``scores`` (above 0); the rest as :func:`mean_rank`."""
        filtered = np.unique(filtered[filtered != answer])
        kept = ~np.isin(candidates, filtered, assume_unique=True)
        candidates, scores = candidates[kept], scores[kept]
        at = np.searchsorted(candidates, answer)
        own = scores[at] if at < candidates.size and candidates[at] == answer else 0.0
        if own > 0:
            if self.prior is None:
                return int(np.count_nonzero(scores > own)) + (int(np.count_nonzero(scores == own)) + 1) / 2
            mine, theirs = self.prior[answer], self.prior[candidates]
            same = scores == own
            better = int(np.count_nonzero(scores > own)) + int(np.count_nonzero(same & (theirs > mine)))
            return better + (int(np.count_nonzero(same & (theirs == mine))) + 1) / 2
        scored = candidates.size  # all above the answer; the unscored: every entity neither scored nor filtered
        if self.prior is None:
            return scored + (self.size - scored - filtered.size + 1) / 2
        mine = self.prior[answer]
        above = self.size - np.searchsorted(self.ordered, mine, side="right")
        level = np.searchsorted(self.ordered, mine, side="right") - np.searchsorted(self.ordered, mine, side="left")
        for out in (candidates, filtered):
            theirs = self.prior[out]
            above -= int(np.count_nonzero(theirs > mine))
            level -= int(np.count_nonzero(theirs == mine))
        return scored + int(above) + (int(level) + 1) / 2  # level: the answer among them


def popularity(known: sparse.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(per entity, the known pairs it is the tail of; ... the head of): the order in which a query
    ``r(h, ?)`` (tails) or ``r(?, t)`` (heads) takes candidates that no rule tells apart. These are the rules
    without a body, ``r(X, c)`` and ``r(c, Y)``, whose confidence grows with that count."""
    return np.asarray(known.sum(axis=0)).ravel(), np.asarray(known.sum(axis=1)).ravel()


TIE_BREAK = 1e-3  # max-aggregation: the noisy-or's weight among candidates of the same best confidence
TOP = 5  # top-aggregation: the rules whose confidences a candidate's score combines, best first
DAMPING = 0.5  # top-aggregation: the weight of each of them after the best
AGGREGATIONS = ("top", "max", "noisy-or")
AGGREGATION = "top"  # how candidates are ranked unless said otherwise
BUCKETS = 16  # bands of confidence in which top_of_levels counts a query's many entries before sorting them


def log_misses(confidences: np.ndarray) -> np.ndarray:
    """log(1 - c) of each confidence, a certain rule (c = 1) held just short of it so that the sum stays finite:
    the terms of a noisy-or, added up."""
    return np.log1p(-np.minimum(confidences, 1 - 1e-9))


def combined(top: np.ndarray, log_miss: np.ndarray, how: str = AGGREGATION) -> np.ndarray:
    """Per candidate, its score from ``top`` (candidates x ``TOP``: the best confidences of the rules deriving
    it, best first, 0 where fewer) and ``log_miss`` (the sum of log(1 - confidence) over all of them):

    - ``top``: 1 - (1 - c1) (1 - c2 / 2) ... (1 - c5 / 2), the best rule's confidence raised by the next four
      at half weight, as a noisy-or. Measured on valid.txt of WN18RR, FB15k-237, Kinship, Family and WN18, it
      ranks as max does where one rule decides, and as noisy-or does where several weak rules agree;
    - ``max``: c1, ties broken by the noisy-or (AnyBURL's max-aggregation, approximated);
    - ``noisy-or``: 1 - prod(1 - c) over all of them."""
    if how not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, not {how!r}")
    either = -np.expm1(log_miss)
    if how == "noisy-or":
        return either
    if how == "max":
        return top[:, 0] + TIE_BREAK * either
    weight = np.full(top.shape[1], DAMPING)
    weight[0] = 1.0
    return -np.expm1(log_misses(top * weight).sum(axis=1))


def noisy_or(rules: list[tuple[Pairs, float]], shape: tuple[int, int]) -> sparse.csr_matrix:
    """Per (head, tail), 1 - prod(1 - confidence) over the rules whose body derives it."""
    return aggregate(rules, shape, "noisy-or")


def aggregate(rules: list[tuple[Pairs, float]], shape: tuple[int, int], how: str = AGGREGATION) -> sparse.csr_matrix:
    """Candidates' scores from the confidences of the rules deriving them (:func:`combined`)."""
    if how not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, not {how!r}")
    return Aggregate.of(rules, shape).scores(how)


Reduced = tuple[np.ndarray, np.ndarray, np.ndarray]  # candidates (ascending), TOP best confidences, log-miss


def top_of(candidates: np.ndarray, confidences: np.ndarray) -> Reduced:
    """(each candidate once, ascending; its ``TOP`` best confidences, best first; the sum of log(1 - c) over
    all of them) from one entry per rule deriving a candidate."""
    values = sorted_unique(confidences)
    return _sorted_levels(candidates, np.searchsorted(values, confidences), values, log_misses(values))


def top_of_levels(
    candidates: np.ndarray, levels: np.ndarray, values: np.ndarray, log_values: np.ndarray | None = None
) -> Reduced:
    """:func:`top_of` of confidences given as indices ``levels`` into ``values`` (distinct, ascending;
    ``log_values`` their :func:`log_misses`, computed here if not given): the many rules of a query with a
    constant. Of many entries only those that can be among their candidate's best are sorted: each
    candidate's entries are counted in ``BUCKETS`` bands of confidence, and a band is kept only while fewer
    than ``TOP`` entries lie above it."""
    if not candidates.size:
        return np.zeros(0, np.int64), np.zeros((0, TOP)), np.zeros(0)
    if log_values is None:
        log_values = log_misses(values)
    candidates = candidates.astype(np.int64)
    size = int(candidates.max()) + 1
    log_miss = np.bincount(candidates, log_values[levels], minlength=size)
    if candidates.size > 4 * size:
        band = levels.astype(np.int64) * BUCKETS // max(values.size, 1)
        counts = np.bincount(candidates * BUCKETS + band, minlength=size * BUCKETS).reshape(size, BUCKETS)
        above = np.zeros_like(counts)  # entries in higher bands, per candidate and band
        above[:, :-1] = np.cumsum(counts[:, :0:-1], axis=1)[:, ::-1]
        kept = above[candidates, band] < TOP
        candidates, levels = candidates[kept], levels[kept]
    found, top, _ = _sorted_levels(candidates, levels, values)
    return found, top, log_miss[found]


def _sorted_levels(
    candidates: np.ndarray, levels: np.ndarray, values: np.ndarray, log_values: np.ndarray | None = None
) -> Reduced:
    """:func:`top_of` of entries given as levels (see :func:`top_of_levels`), by one sort of integer keys,
    candidate then best first (a lexsort of two keys takes twice as long; sorted runs, such as each rule's
    pairs, are merged by a stable sort rather than sorted anew); the log-miss only with ``log_values``
    (zeros otherwise)."""
    width = np.int64(max(values.size, 1))
    if candidates.size and int(candidates.max()) >= np.iinfo(np.int64).max // width:  # no room for one key
        order = np.lexsort((-levels, candidates))
        candidates, levels = candidates[order], levels[order]
    else:
        key = candidates.astype(np.int64) * width + (width - 1 - levels)
        key.sort(kind="stable")
        candidates, levels = key // width, width - 1 - key % width
    starts = run_starts(candidates)
    top = np.zeros((starts.size, TOP))
    sizes = np.diff(starts, append=candidates.size)
    has = np.arange(starts.size)
    for place in range(TOP):  # each candidate's entries come best first: its best are its first TOP
        has = has[sizes[has] > place]
        top[has, place] = values[levels[starts[has] + place]]
    if log_values is None or not starts.size:
        return candidates[starts], top, np.zeros(starts.size)
    return candidates[starts], top, np.add.reduceat(log_values[levels], starts)


def top_of_rows(rules: sparse.csr_matrix, confidences: np.ndarray) -> Reduced:
    """:func:`top_of` of a candidates x rules 0/1 matrix whose columns (rules) come best first, ``confidences``
    theirs: a candidate's first ``TOP`` rules are its best, so nothing is sorted but the matrix's columns."""
    rules = sparse.csr_matrix(rules)
    rules.sort_indices()
    sizes = np.diff(rules.indptr)
    present = np.flatnonzero(sizes)
    top = np.zeros((present.size, TOP))
    starts, sizes = rules.indptr[present], sizes[present]
    for level in range(TOP):
        has = np.flatnonzero(sizes > level)
        top[has, level] = confidences[rules.indices[starts[has] + level]]
    log_miss = rules @ log_misses(confidences)
    return present, top, log_miss[present]


def merge(*parts: Reduced) -> Reduced:
    """One :data:`Reduced` of candidates from several, as if their rules had been aggregated together: each
    candidate's best confidences of every part side by side, sorted, the best ``TOP`` kept."""
    parts = tuple(p for p in parts if p[0].size)
    if not parts:
        return np.zeros(0, np.int64), np.zeros((0, TOP)), np.zeros(0)
    out = parts[0]
    for part in parts[1:]:
        out = _merge_two(out, part)
    return out


def _merge_two(first: Reduced, second: Reduced) -> Reduced:
    """:func:`merge` of two: the second's candidates found among the first's by a binary search (both are
    ascending), the shared ones' best confidences combined, the others inserted where they sort."""
    (a, top_a, miss_a), (b, top_b, miss_b) = first, second
    at = np.searchsorted(a, b)
    shared = at < a.size
    shared[shared] = a[at[shared]] == b[shared]
    rows = at[shared]  # the shared candidates' rows in the first
    top, log_miss = top_a.copy(), miss_a.copy()
    side = np.concatenate([top_a[rows], top_b[shared]], axis=1)
    side.sort(axis=1)
    top[rows] = side[:, : -TOP - 1 : -1]
    log_miss[rows] += miss_b[shared]
    new = ~shared
    where = at[new]
    return (
        np.insert(a, where, b[new]),
        np.insert(top, where, top_b[new], axis=0),
        np.insert(log_miss, where, miss_b[new]),
    )


class Aggregate:
    """The rules deriving each (head, tail), taken in rule by rule, so that no more than a buffer of derived
    pairs is held: per pair its ``TOP`` best confidences and the noisy-or of all (all that :func:`combined`
    reads). The rules added are held as they come and folded now and then into that reduced state: reduced
    among themselves, then merged with it, so that a fold reads the state's pairs once and never sorts them
    again. With ``rows`` and ``columns`` only those rows and columns are kept: the ones a ranking reads (the
    heads and tails of the triples it asks about)."""

    BUFFER = 8_000_000  # derived pairs of the rules added held before they are folded in

    def __init__(self, shape: tuple[int, int], rows: np.ndarray | None = None, columns: np.ndarray | None = None):
        self.shape = shape
        self.pending: list[tuple[np.ndarray, float]] = []  # the rules added since the last fold: keys, confidence
        self.held = 0  # their pairs
        self.reduced: Reduced = (np.zeros(0, np.int64), np.zeros((0, TOP)), np.zeros(0))  # keys ascending
        self.by_column: tuple[np.ndarray, np.ndarray] | None = None  # reduced keys' order by column, the columns
        self.select = None
        if rows is not None and columns is not None:
            self.select = (_chosen(rows, shape[0]), _chosen(columns, shape[1]))

    @classmethod
    def of(cls, rules: list[tuple[Pairs, float]], shape: tuple[int, int]) -> Aggregate:
        """Every rule of ``rules`` (its pairs, its confidence) taken in."""
        out = cls(shape)
        for pairs, confidence in rules:
            out.add(pairs, confidence)
        return out

    def copy(self) -> Aggregate:
        """An aggregate of the same rules, which rules added later join apart from this one."""
        out = Aggregate(self.shape)
        out.select, out.reduced, out.by_column = self.select, self._reduce(), self.by_column
        return out

    def add(self, pairs: Pairs, confidence: float, kept: bool = False) -> None:
        """Take in a rule deriving the nonzero pairs of ``pairs`` (those in the kept rows and columns; ``kept``:
        ``pairs`` holds no others)."""
        if confidence <= 0:
            return
        self.add_entries(*entries(canonical(pairs)), confidence, kept)

    def add_entries(self, rows: np.ndarray, columns: np.ndarray, confidence: float, kept: bool = False) -> None:
        """:meth:`add` of a rule's pairs given as the rows and columns of its entries, row by row, each row's
        columns ascending (a counted path rule's, :class:`nlndl.paths.PathRule`)."""
        if confidence <= 0:
            return
        if not kept:
            keep = self.keeps(rows, columns)
            if keep is not None:
                rows, columns = rows[keep], columns[keep]
        self.add_keys(rows * self.shape[1] + columns, confidence)

    def keeps(self, rows: np.ndarray, columns: np.ndarray) -> np.ndarray | None:
        """Which of the entries at ``rows``, ``columns`` lie in the kept rows and columns (None: all of them)."""
        if self.select is None:
            return None
        chosen_rows, chosen_columns = self.select
        return chosen_rows[rows] | chosen_columns[columns]

    def add_keys(self, keys: np.ndarray, confidence: float) -> None:
        """Take in a rule deriving the pairs of ``keys`` (row * width + column, distinct and ascending)."""
        if confidence <= 0 or not keys.size:
            return
        self.pending.append((keys, float(confidence)))
        self.held += keys.size
        # past the buffer, or half the reduced pairs: a fold reads all of them, so a large state waits for more
        if self.held > max(self.BUFFER, self.reduced[0].size // 2):
            self._reduce()

    def _reduce(self) -> Reduced:
        """The reduced state, with the rules added since the last fold folded in."""
        if self.pending:
            keys = np.concatenate([k for k, _ in self.pending])
            confidences = np.array([c for _, c in self.pending])
            values = sorted_unique(confidences)
            levels = np.repeat(np.searchsorted(values, confidences), [k.size for k, _ in self.pending])
            self.reduced = merge(self.reduced, _sorted_levels(keys, levels, values, log_misses(values)))
            self.pending, self.held, self.by_column = [], 0, None
        return self.reduced

    def scores(self, how: str = AGGREGATION) -> sparse.csr_matrix:
        """Per (head, tail), as :func:`combined` scores it from the rules added."""
        keys, top, log_miss = self._reduce()
        rows, cols = np.divmod(keys, self.shape[1])
        return sparse.csr_matrix((combined(top, log_miss, how), (rows, cols)), shape=self.shape)

    def query(self, entity: int, tail_asked: bool) -> Reduced:
        """The candidates the rules derive for ``r(entity, ?)`` (``tail_asked``) or ``r(?, entity)``, with their
        top confidences and noisy-or log-miss (as :func:`top_of` gives them)."""
        keys, top, log_miss = self._reduce()
        width = self.shape[1]
        if tail_asked:
            lo, hi = np.searchsorted(keys, [entity * width, (entity + 1) * width])
            return keys[lo:hi] % width, top[lo:hi], log_miss[lo:hi]
        if self.by_column is None:  # keys by row, then column: a stable sort by column orders them by column, row
            order = np.argsort(keys % width, kind="stable")
            self.by_column = (order, keys[order] % width)
        order, columns = self.by_column
        lo, hi = np.searchsorted(columns, [entity, entity + 1])
        at = order[lo:hi]
        return keys[at] // width, top[at], log_miss[at]

    def merged(self, entity: int, tail_asked: bool, extra: Reduced | None = None) -> Reduced:
        """:meth:`query`, with ``extra`` the candidates of further rules for it (nlndl.constants) taken in as the
        counted ones are."""
        found = self.query(entity, tail_asked)
        return found if extra is None else merge(found, extra)

    def line(
        self, entity: int, tail_asked: bool, size: int, how: str = AGGREGATION, extra: Reduced | None = None
    ) -> np.ndarray:
        """Every candidate's score for the query (0 where no rule derives it), with ``extra`` (:meth:`merged`)."""
        candidates, top, log_miss = self.merged(entity, tail_asked, extra)
        out = np.zeros(size)
        out[candidates] = combined(top, log_miss, how)
        return out


def by_class(pairs: Pairs, kinds: np.ndarray, columns: bool) -> list[Pairs]:
    """``pairs`` split by the class of each entry's column (``columns``) or row, ``kinds`` the class of each
    entity (0 to ``cardinality.CLASSES - 1``): one matrix of the same shape per class."""
    pairs = sparse.csr_matrix(pairs)
    rows = np.repeat(np.arange(pairs.shape[0]), np.diff(pairs.indptr))
    kind = kinds[pairs.indices if columns else rows]
    return [taken(pairs, rows, kind == c) for c in range(cardinality.CLASSES)]


class Classed:
    """Rules whose confidence depends on the direction asked and the candidate's class
    (:mod:`nlndl.cardinality`): an :class:`Aggregate` per direction, a rule's candidates of each class taken
    into it with that class's confidence. With ``rows`` and ``columns`` (the heads and tails asked about) the
    tails' aggregate keeps those rows and the heads' those columns."""

    def __init__(
        self,
        shape: tuple[int, int],
        known: sparse.csr_matrix,
        rows: np.ndarray | None = None,
        columns: np.ndarray | None = None,
    ) -> None:
        self.shape = shape
        self.known = known
        self.known_keys = nonzero_keys(known)
        self.degree = cardinality.degrees(known)
        self.classes = cardinality.classes(known)
        none = np.zeros(0, np.int64)
        selected = rows is not None and columns is not None
        self.tails = Aggregate(shape, rows, none) if selected else Aggregate(shape)  # answers r(h, ?)
        self.heads = Aggregate(shape, none, columns) if selected else Aggregate(shape)  # answers r(?, t)

    def add(self, pairs: Pairs, confidence: float) -> None:
        """Take in a rule deriving ``pairs`` of ``confidence``, by its confidences by direction and class
        (:func:`nlndl.cardinality.confidences`)."""
        if confidence <= 0:
            return
        pairs = canonical(pairs)  # sorted once here, so that every part split from it is sorted
        self.add_entries(*entries(pairs), confidence, pairs.data != 0)

    def add_entries(
        self, rows: np.ndarray, columns: np.ndarray, confidence: float, stored: np.ndarray | None = None
    ) -> None:
        """:meth:`add` of a rule's pairs given as the rows and columns of its entries, row by row, each row's
        columns ascending; ``stored``: which entries are nonzero (None: all), the others derive no known pair."""
        if confidence <= 0:
            return
        keys = rows * self.shape[1] + columns
        hits = member(keys, self.known_keys)
        if stored is not None:
            hits &= stored
        confidences = cardinality.confidences_of(rows, columns, hits, self.degree, confidence)
        for side, into in enumerate((self.tails, self.heads)):
            kind = self.classes[side][columns if side == 0 else rows]
            keep = into.keeps(rows, columns)
            for of_class, confidence_of_class in enumerate(confidences[side]):
                chosen = kind == of_class if keep is None else keep & (kind == of_class)
                into.add_keys(keys[chosen], confidence_of_class)

    def copy(self) -> Classed:
        """The same rules, which rules added later join apart from these."""
        out = Classed.__new__(Classed)
        out.shape, out.known, out.degree, out.classes = self.shape, self.known, self.degree, self.classes
        out.known_keys = self.known_keys
        out.tails, out.heads = self.tails.copy(), self.heads.copy()
        return out

    def merged(self, entity: int, tail_asked: bool, extra: Reduced | None = None) -> Reduced:
        """:meth:`Aggregate.merged` of the direction asked."""
        return (self.tails if tail_asked else self.heads).merged(entity, tail_asked, extra)


def _chosen(entities: np.ndarray, n: int) -> np.ndarray:
    """A mask of n entities, true at ``entities``."""
    out = np.zeros(n, dtype=bool)
    out[np.asarray(entities, dtype=np.int64)] = True
    return out


Extra = Callable[[int, bool], Reduced]  # (entity asked about, tail asked) -> the further rules' candidates
# the rules, their aggregation (AGGREGATIONS), whether ``extra`` joins them
Ranked = tuple["Aggregate | Classed", str, bool]


def ranks(
    rules: Aggregate,
    test: list[tuple[int, int]],
    known: set[tuple[int, int]],
    prior: tuple[np.ndarray, np.ndarray] | None = None,
    extra: Extra | None = None,
    how: str = AGGREGATION,
) -> np.ndarray:
    """The ranks of every test pair (h, t) asked both ways: among the tails of h and among the heads of t,
    scored by the rules (:meth:`Aggregate.line`), the other ``known`` true pairs filtered out; candidates of
    equal score ordered by ``prior`` (tails, heads: :func:`popularity`) where given; ``extra``: the candidates
    of further rules (nlndl.constants), aggregated with the others."""
    return ranks_of([(rules, how, extra is not None)], test, known, prior, extra)[0]


def ranks_of(
    many: list[Ranked],
    test: list[tuple[int, int]],
    known: set[tuple[int, int]],
    prior: tuple[np.ndarray, np.ndarray] | None = None,
    extra: Extra | None = None,
) -> list[np.ndarray]:
    """:func:`ranks` of several rankings on the same test pairs, each with ``extra`` taken in or not (it is
    computed once a query)."""
    by_head: dict[int, list[int]] = {}
    by_tail: dict[int, list[int]] = {}
    for h, t in known:
        by_head.setdefault(h, []).append(t)
        by_tail.setdefault(t, []).append(h)
    tails, heads = prior if prior is not None else (None, None)  # popularity's order: tails, heads
    rankers = {True: Ranker(many[0][0].shape[1], tails), False: Ranker(many[0][0].shape[0], heads)} if many else {}
    out: list[list[float]] = [[] for _ in many]
    wanted = extra is not None and any(use for _, _, use in many)
    for h, t in test:
        for entity, answer, tail_asked, filtered in (
            (h, t, True, by_head.get(h, [])),
            (t, h, False, by_tail.get(t, [])),
        ):
            more = extra(entity, tail_asked) if wanted else None
            filtered = np.array(filtered, dtype=np.int64)
            merged: dict[tuple[int, bool], Reduced] = {}  # once per rules
            for k, (rules, how, use) in enumerate(many):
                if (id(rules), use) not in merged:
                    merged[id(rules), use] = rules.merged(entity, tail_asked, more if use else None)
                candidates, top, log_miss = merged[id(rules), use]
                scores = combined(top, log_miss, how)
                out[k].append(rankers[tail_asked].rank(candidates, scores, answer, filtered))
    return [np.array(r) for r in out]
