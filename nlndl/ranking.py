"""Ranking entities with rules, and the knowledge-graph completion metrics: filtered MRR and Hits@k.

The protocol of the rule-learning literature (Neural LP and its successors): each test triple r(h, t) is
asked in both directions, r(h, ?) and r(?, t); every entity is a candidate, scored by the rules that derive
it (the best confidence among them, or their noisy-or; 0 where none does); candidates of equal score are
ordered by how often they answer the relation in the known triples (the rules without a body); candidates
that are other known true triples are removed (filtered); the rank of the answer among the rest counts tied
candidates at the mean rank of the tied group, so that an answer tied with many others is not ranked first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

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


def popularity(known: sparse.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """(per entity, the known pairs it is the tail of; ... the head of): the order in which a query
    ``r(h, ?)`` (tails) or ``r(?, t)`` (heads) takes candidates that no rule tells apart. These are the rules
    without a body, ``r(X, c)`` and ``r(c, Y)``, whose confidence grows with that count."""
    return np.asarray(known.sum(axis=0)).ravel(), np.asarray(known.sum(axis=1)).ravel()


def noisy_or(rules: list[tuple[Pairs, float]], shape: tuple[int, int]) -> sparse.csr_matrix:
    """Per (head, tail), 1 - prod(1 - confidence) over the rules whose body derives it."""
    log_miss = sparse.csr_matrix(shape, dtype=np.float64)
    for pairs, confidence in rules:
        if confidence <= 0:
            continue
        log_miss = log_miss + pairs.astype(np.float64) * np.log1p(-min(confidence, 1 - 1e-9))
    out = log_miss.copy()
    out.data = -np.expm1(out.data)
    return out


TIE_BREAK = 1e-3  # max-aggregation: the noisy-or's weight among candidates of the same best confidence
AGGREGATIONS = ("max", "noisy-or")


def max_aggregate(rules: list[tuple[Pairs, float]], shape: tuple[int, int]) -> sparse.csr_matrix:
    """Per (head, tail), the highest confidence of the rules whose body derives it, ties (candidates whose best
    rule is as good) broken by the noisy-or of all of them: AnyBURL's max-aggregation, the lexicographic
    order of the sorted confidences, approximated by its first term and the noisy-or."""
    best = sparse.csr_matrix(shape, dtype=np.float64)
    for pairs, confidence in rules:
        if confidence > 0:
            best = best.maximum(pairs.astype(np.float64) * confidence)
    return best + TIE_BREAK * noisy_or(rules, shape)


def aggregate(rules: list[tuple[Pairs, float]], shape: tuple[int, int], how: str = "max") -> sparse.csr_matrix:
    """Candidates' scores from the confidences of the rules deriving them: ``max`` or ``noisy-or``."""
    if how not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, not {how!r}")
    return max_aggregate(rules, shape) if how == "max" else noisy_or(rules, shape)


class Aggregate:
    """:func:`aggregate` taken rule by rule, so that no more than a buffer of derived pairs is held: each rule's
    pairs are added with its confidence, and reduced per pair (best confidence, noisy-or) now and then. With
    ``rows`` and ``columns`` only those rows and columns of the scores are kept: the ones a ranking reads
    (the heads and tails of the triples it asks about)."""

    BUFFER = 8_000_000  # derived pairs held before they are reduced

    def __init__(self, shape: tuple[int, int], rows: np.ndarray | None = None, columns: np.ndarray | None = None):
        self.shape = shape
        self.keys: list[np.ndarray] = []
        self.best: list[np.ndarray] = []
        self.log_miss: list[np.ndarray] = []
        self.held = 0
        self.select = None
        if rows is not None and columns is not None:
            self.select = (_selector(rows, shape[0]), _selector(columns, shape[1]))

    def kept(self, pairs: Pairs) -> Pairs:
        """The part of ``pairs`` in the kept rows and columns (all of it without a selection)."""
        if self.select is None:
            return pairs
        rows, columns = self.select
        return (rows @ pairs + pairs @ columns).tocsr()

    def add(self, pairs: Pairs, confidence: float, kept: bool = False) -> None:
        """Take in a rule deriving the nonzero pairs of ``pairs`` (already :meth:`kept`, if ``kept``)."""
        if confidence <= 0:
            return
        part = (pairs if kept else self.kept(pairs)).tocoo()
        keys = part.row.astype(np.int64) * self.shape[1] + part.col
        if not keys.size:
            return
        keys = np.unique(keys)
        self.keys.append(keys)
        self.best.append(np.full(keys.size, confidence))
        self.log_miss.append(np.full(keys.size, np.log1p(-min(confidence, 1 - 1e-9))))
        self.held += keys.size
        if self.held > self.BUFFER:
            self._reduce()

    def _reduce(self) -> None:
        if len(self.keys) <= 1:
            return
        keys, best, log_miss = (np.concatenate(x) for x in (self.keys, self.best, self.log_miss))
        order = np.argsort(keys, kind="stable")
        keys, best, log_miss = keys[order], best[order], log_miss[order]
        starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        self.keys = [keys[starts]]
        self.best = [np.maximum.reduceat(best, starts)]
        self.log_miss = [np.add.reduceat(log_miss, starts)]
        self.held = starts.size

    def scores(self, how: str = "max") -> sparse.csr_matrix:
        """Per (head, tail), as :func:`aggregate` gives them for the rules added."""
        if how not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, not {how!r}")
        self._reduce()
        if not self.keys:
            return sparse.csr_matrix(self.shape, dtype=np.float64)
        keys = self.keys[0]
        either = -np.expm1(self.log_miss[0])
        values = self.best[0] + TIE_BREAK * either if how == "max" else either
        rows, cols = np.divmod(keys, self.shape[1])
        return sparse.csr_matrix((values, (rows, cols)), shape=self.shape)


def _selector(entities: np.ndarray, n: int) -> sparse.csr_matrix:
    """The n x n diagonal 0/1 matrix of ``entities``: multiplying by it keeps their rows (or columns)."""
    chosen = np.unique(np.asarray(entities, dtype=np.int64))
    return sparse.csr_matrix((np.ones(chosen.size, np.float32), (chosen, chosen)), shape=(n, n))


Extra = Callable[[int, bool], np.ndarray]  # (entity asked about, tail asked) -> a score per candidate


def ranks(
    scores: sparse.csr_matrix,
    test: list[tuple[int, int]],
    known: set[tuple[int, int]],
    prior: tuple[np.ndarray, np.ndarray] | None = None,
    extra: Extra | None = None,
) -> np.ndarray:
    """The ranks of every test pair (h, t) asked both ways: among the tails of h and among the heads of t,
    the other ``known`` true pairs filtered out; candidates of equal score ordered by ``prior`` (tails, heads:
    :func:`popularity`) where given; ``extra``: scores of further rules (nlndl.constants), taken where
    higher."""
    return ranks_of([(scores, extra is not None)], test, known, prior, extra)[0]


def ranks_of(
    many: list[tuple[sparse.csr_matrix, bool]],
    test: list[tuple[int, int]],
    known: set[tuple[int, int]],
    prior: tuple[np.ndarray, np.ndarray] | None = None,
    extra: Extra | None = None,
) -> list[np.ndarray]:
    """:func:`ranks` of several score matrices on the same test pairs, each with ``extra`` taken in or not (it
    is computed once a query)."""
    by_head: dict[int, list[int]] = {}
    by_tail: dict[int, list[int]] = {}
    for h, t in known:
        by_head.setdefault(h, []).append(t)
        by_tail.setdefault(t, []).append(h)
    columns = [m.tocsc() for m, _ in many]
    tails, heads = prior if prior is not None else (None, None)
    out: list[list[float]] = [[] for _ in many]
    wanted = extra is not None and any(use for _, use in many)
    for h, t in test:
        for entity, answer, tail_asked, filtered, order in (
            (h, t, True, by_head.get(h, []), tails),
            (t, h, False, by_tail.get(t, []), heads),
        ):
            more = extra(entity, tail_asked) if wanted else None
            filtered = np.array(filtered, dtype=np.int64)
            for k, ((scores, use), by_column) in enumerate(zip(many, columns, strict=True)):
                line = scores.getrow(entity) if tail_asked else by_column.getcol(entity).T
                row = line.toarray().ravel()
                if use and more is not None:
                    row = np.maximum(row, more)
                out[k].append(mean_rank(row, answer, filtered, order))
    return [np.array(r) for r in out]
