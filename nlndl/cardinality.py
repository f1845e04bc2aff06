"""A rule's confidence by its candidate's class: how many known triples of the relation the candidate already
holds in the role it is asked for (none, one, two or more).

Many relations hold a bounded number of times per entity: a synset has one hypernym, a member belongs to one
group. A rule that derives, for ``r(?, t)``, a candidate that already holds its one ``r`` tail is mostly wrong
there, and right as often as ever for a candidate that holds none. So a rule's confidence is counted apart
per direction asked (a rule answers ``r(h, ?)`` with tails and ``r(?, t)`` with heads) and per class of the
candidate, from the same pairs as its one confidence: a known pair classes its candidate by the candidate's
other known triples, the pair itself left out, as a triple ranked is absent from the graph that ranks it.
Each class's count is shrunk towards the rule's one confidence by ``SHRINK`` pairs, so that a class with few
pairs keeps near it, and a class only lowers a rule, never raises it: raised, the weak rules of a candidate
that holds none add up past a strong one (WN18's eight restatements of "a member of the same group has the
same hypernym", each 0.36 and 0.85 for such a candidate, outranked its inverse rule at 0.93). The ranking
(:class:`nlndl.ranking.Classed`) takes each rule's confidence for the class a candidate holds in the graph.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from nlndl.pairs import canonical, entries, member, nonzero_keys

CLASSES = 3  # a candidate's other known triples of the relation in its role: none, one, two or more
# pairs at the rule's one confidence added to each class's counts: on valid.txt (with classes raising rules as
# well), 20 ranked higher than 1 and 5 on the FB15k-237 sample, Kinship and Family, and the same on WN18RR
SHRINK = 20.0

Classes = tuple[np.ndarray, np.ndarray]  # per entity, its class as a tail (answering r(h, ?)) and as a head


def degrees(known: sparse.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Per entity, the known pairs it is the tail of, and the head of."""
    return (
        np.asarray(known.sum(axis=0), dtype=np.int64).ravel(),
        np.asarray(known.sum(axis=1), dtype=np.int64).ravel(),
    )


def class_of(count: np.ndarray) -> np.ndarray:
    """The class of a candidate with ``count`` other known triples in its role: the count, capped at
    ``CLASSES - 1``."""
    return np.minimum(count, CLASSES - 1)


def classes(known: sparse.csr_matrix) -> Classes:
    """Per entity, its class as a candidate tail (the known pairs it is the tail of, capped at ``CLASSES - 1``)
    and as a candidate head (the known pairs it is the head of)."""
    tails, heads = degrees(known)
    return class_of(tails), class_of(heads)


def tally(pairs: sparse.csr_matrix, known: sparse.csr_matrix, degree: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """A rule's counts by direction and class, (2, 2, ``CLASSES``): [direction][correct, predicted][class],
    direction 0 the tails it derives (queries ``r(h, ?)``), 1 the heads (``r(?, t)``). ``pairs``: the rule's
    derived (head, tail) pairs; ``known``: the relation's known pairs; ``degree``: :func:`degrees` of
    ``known``. A known pair classes its candidate without itself."""
    pairs = canonical(pairs)
    rows, columns = entries(pairs)
    hits = member(rows * pairs.shape[1] + columns, nonzero_keys(known)) & (pairs.data != 0)
    return tally_of(rows, columns, hits, degree)


def tally_of(
    rows: np.ndarray, columns: np.ndarray, hits: np.ndarray, degree: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """:func:`tally` of the pairs at ``rows``, ``columns``, ``hits`` marking those known (and nonzero)."""
    out = np.zeros((2, 2, CLASSES))
    for side, (every, count) in enumerate(((columns, degree[0]), (rows, degree[1]))):
        of_hits = count[every[hits]]
        as_is = np.bincount(class_of(count[every]), minlength=CLASSES)
        hit_as_is = np.bincount(class_of(of_hits), minlength=CLASSES)
        hit_left_out = np.bincount(class_of(of_hits - 1), minlength=CLASSES)
        out[side, 0] = hit_left_out
        out[side, 1] = as_is - hit_as_is + hit_left_out  # a known pair counted in its candidate's class without itself
    return out


def confidences(
    pairs: sparse.csr_matrix,
    known: sparse.csr_matrix,
    degree: tuple[np.ndarray, np.ndarray],
    overall: float | None = None,
) -> np.ndarray:
    """A rule's confidences by direction and class, (2, ``CLASSES``) (:func:`tally`): each class's correct over
    predicted, with ``SHRINK`` pairs at the rule's one confidence (``overall``, else its correct over
    predicted) added, and no higher than that one confidence: a class lowers a rule, never raises it."""
    return shrunk(tally(pairs, known, degree), overall)


def confidences_of(
    rows: np.ndarray,
    columns: np.ndarray,
    hits: np.ndarray,
    degree: tuple[np.ndarray, np.ndarray],
    overall: float | None = None,
) -> np.ndarray:
    """:func:`confidences` of the pairs at ``rows``, ``columns``, ``hits`` marking those known."""
    return shrunk(tally_of(rows, columns, hits, degree), overall)


def shrunk(counts: np.ndarray, overall: float | None) -> np.ndarray:
    """The confidences by direction and class from a :func:`tally`, as :func:`confidences` gives them."""
    if overall is None:
        predicted = counts[0, 1].sum()
        overall = counts[0, 0].sum() / predicted if predicted else 0.0
    return np.minimum((counts[:, 0] + SHRINK * overall) / (counts[:, 1] + SHRINK), overall)
