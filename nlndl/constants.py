"""Rules with a constant, mined by counting: AnyBURL's acyclic rules of one body atom.

For a target relation r and an entity c, the rules

    r(X, c) :- s(X, d).     r(X, c) :- s(X, _).     (and their mirror images r(c, Y) :- s(Y, d), ...)

with s any relation of the graph read either way (s(d, X) too). Path clauses relate two entities through the
graph; these say which answers an entity's own edges make likely (a person with a film credit is probably an
actor), which no clause without constants can express. Each one's confidence is AnyBURL's: the known r
triples it derives over the entities its body holds for, plus ``UNSEEN`` (so that a rule seen once does not
outrank one seen a hundred times). A dangling rule (``s(X, _)``) says only what kind of entity X is, so in a
candidate's score it counts at ``DANGLING`` of its confidence, as PyClause weighs AnyBURL's: it orders the
candidates the other rules leave tied instead of lifting every candidate of that kind. They are counted, not
learned: one sparse product per relation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from nlndl.compiler.join import ranges, sorted_unique
from nlndl.compiler.symbols import quoted
from nlndl.ranking import Reduced, log_misses, merge, top_of_levels, top_of_rows

UNSEEN = 5  # AnyBURL's pessimistic correction: confidence = correct / (predicted + UNSEEN)
MIN_CORRECT = 2  # known triples a rule must derive to be kept (AnyBURL's default)
DANGLING = 0.01  # a dangling rule's weight in a score: its confidence times this (PyClause's for AnyBURL's U_d rules)


@dataclass
class Bodies:
    """Per entity, the one-atom bodies that hold for it as X: ``s(X, _)`` (open: one column per relation and
    direction) and ``s(X, d)`` (closed: one column per relation, direction and constant that occurs)."""

    atoms: list[tuple[str, bool]]  # (relation, read backwards: s(d, X))
    open: sparse.csr_matrix  # entities x atoms, 0/1
    closed: sparse.csc_matrix  # entities x closed bodies, 0/1 (columns read per rule, rows per query)
    closed_rows: sparse.csr_matrix  # the same, by entity
    closed_atom: np.ndarray  # closed body -> its atom
    closed_constant: np.ndarray  # closed body -> d
    open_count: np.ndarray = field(init=False)  # per atom, the entities it holds for
    closed_count: np.ndarray = field(init=False)  # per closed body, the same

    def __post_init__(self) -> None:
        self.open_count = np.asarray(self.open.sum(axis=0)).ravel()
        self.closed_count = np.asarray(self.closed_rows.sum(axis=0)).ravel()

    @classmethod
    def of(cls, matrices: dict[str, sparse.csr_matrix]) -> Bodies:
        """From each relation's known (head, tail) pairs as an entities x entities 0/1 matrix."""
        atoms, opened, rows, keys = [], [], [], []
        n = next(iter(matrices.values())).shape[0] if matrices else 0
        for relation in sorted(matrices):
            for back in (False, True):
                m = (matrices[relation].T if back else matrices[relation]).tocoo()
                k = len(atoms)
                atoms.append((relation, back))
                opened.append(np.unique(m.row))
                rows.append(m.row.astype(np.int64))
                keys.append(k * np.int64(n) + m.col.astype(np.int64))
        heads = np.concatenate([np.unique(r) for r in opened]) if opened else np.zeros(0, np.int64)
        which = np.concatenate([np.full(r.size, k) for k, r in enumerate(opened)]) if opened else heads
        open_ = sparse.csr_matrix((np.ones(heads.size, np.float32), (heads, which)), shape=(n, len(atoms)))
        row = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        key = np.concatenate(keys) if keys else np.zeros(0, np.int64)
        columns, column = np.unique(key, return_inverse=True)
        closed = sparse.csr_matrix((np.ones(row.size, np.float32), (row, column)), shape=(n, columns.size))
        return cls(atoms, open_, closed.tocsc(), closed, columns // max(n, 1), columns % max(n, 1))


@dataclass
class Side:
    """The rules of one direction, ``r(X, c) :- body(X)`` (tails) or ``r(c, Y) :- body(Y)`` (heads): per body and
    constant c, the known triples derived (correct) and the entities the body holds for (predicted)."""

    open: sparse.csr_matrix  # atoms x entities: correct
    closed: sparse.csr_matrix  # closed bodies x entities: correct
    open_predicted: np.ndarray  # per atom
    closed_predicted: np.ndarray  # per closed body

    @classmethod
    def mine(cls, bodies: Bodies, known: sparse.csr_matrix, own: int | None) -> Side:
        """``known``: X -> c, the relation's known pairs in this direction; ``own``: the atom that is the
        relation itself read this way, whose closed rule r(X, c) :- r(X, c) would only restate what is known."""
        open_ = _kept(sparse.csr_matrix(bodies.open.T @ known))
        closed = sparse.csr_matrix(bodies.closed_rows.T @ known).tocoo()
        keep = closed.data >= MIN_CORRECT
        if own is not None:
            keep &= ~((bodies.closed_atom[closed.row] == own) & (bodies.closed_constant[closed.row] == closed.col))
        closed = sparse.csr_matrix(
            (closed.data[keep], (closed.row[keep], closed.col[keep])), shape=closed.shape, dtype=np.float64
        )
        return cls(open_, closed, bodies.open_count, bodies.closed_count)

    def weighed(self) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
        """(open, closed) tables of each rule's confidence, correct / (predicted + UNSEEN), times its
        :func:`weight`: what a score counts."""
        out = []
        for closed, correct, predicted in (
            (False, self.open, self.open_predicted),
            (True, self.closed, self.closed_predicted),
        ):
            conf = correct.tocoo()
            conf.data = weight(closed) * conf.data / (predicted[conf.row] + UNSEEN)
            out.append(conf.tocsr())
        return out[0], out[1]

    def count(self) -> int:
        return int(self.open.nnz + self.closed.nnz)


def weight(closed: bool) -> float:
    """The share of a rule's confidence that a score counts: 1 for a closed body s(X, d), ``DANGLING`` for a
    dangling one s(X, _)."""
    return 1.0 if closed else DANGLING


def _spans(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The positions in a CSR (or CSC) matrix's indices and data of the given rows (columns), in order."""
    starts = indptr[rows]
    return ranges(starts, indptr[rows + 1] - starts)


def _kept(counts: sparse.csr_matrix) -> sparse.csr_matrix:
    counts = counts.astype(np.float64)
    counts.data[counts.data < MIN_CORRECT] = 0
    counts.eliminate_zeros()
    return counts


@dataclass
class ConstantRules:
    """A relation's rules with a constant, both directions, and their application to a query."""

    relation: str
    tails: Side  # r(X, c) :- body(X)
    heads: Side  # r(c, Y) :- body(Y)

    @classmethod
    def mine(cls, bodies: Bodies, relation: str, known: sparse.csr_matrix) -> ConstantRules:
        forward = bodies.atoms.index((relation, False)) if (relation, False) in bodies.atoms else None
        backward = bodies.atoms.index((relation, True)) if (relation, True) in bodies.atoms else None
        return cls(
            relation,
            Side.mine(bodies, sparse.csr_matrix(known), forward),
            Side.mine(bodies, sparse.csr_matrix(known.T), backward),
        )

    def count(self) -> int:
        return self.tails.count() + self.heads.count()

    def scorer(self, bodies: Bodies) -> Scorer:
        return Scorer(bodies, self)


class Scorer:
    """The rules with a constant that answer a query ``r(e, ?)`` or ``r(?, e)``, per candidate: those whose
    body holds for e (constant c the candidate), and those whose constant is e (applied to every entity their
    body holds for). A dangling rule counts at ``DANGLING`` of its confidence, here and in :meth:`explain`."""

    def __init__(self, bodies: Bodies, rules: ConstantRules) -> None:
        self.bodies = bodies
        self.columns = (bodies.open.tocsc(), bodies.closed)
        self.tables = {}
        for name, side in (("tails", rules.tails), ("heads", rules.heads)):
            open_, closed = side.weighed()
            self.tables[name] = (open_, closed, open_.T.tocsr(), closed.T.tocsr())
        # every confidence as its index among the distinct ones, for tables read by body (see reduced)
        found = [t.data for name in self.tables for t in self.tables[name][:2]]
        self.values = sorted_unique(np.concatenate(found)) if found else np.zeros(0)
        self.log_values = log_misses(self.values)
        self.levels = {
            (name, k): np.searchsorted(self.values, self.tables[name][k].data) for name in self.tables for k in (0, 1)
        }

    def reduced(self, entity: int, tail_asked: bool) -> Reduced:
        """The candidates these rules derive for the query, each with its best confidences and their noisy-or
        (:data:`nlndl.ranking.Reduced`, what the ranking aggregates)."""
        asked, other = ("tails", "heads") if tail_asked else ("heads", "tails")
        open_, closed, open_by_constant, closed_by_constant = (*self.tables[asked][:2], *self.tables[other][2:])
        candidates, levels = [], []
        for k, (incidence, table) in enumerate(((self.bodies.open, open_), (self.bodies.closed_rows, closed))):
            held = incidence.indices[incidence.indptr[entity] : incidence.indptr[entity + 1]]
            at = _spans(table.indptr, held)  # the rules of the bodies that hold for entity: c the candidate
            candidates.append(table.indices[at])
            levels.append(self.levels[asked, k][at])
        found = top_of_levels(np.concatenate(candidates), np.concatenate(levels), self.values, self.log_values)
        # the rules whose constant is entity, applied to every entity their body holds for: many entities each,
        # so taken as columns of the body incidence, best rule first
        columns, conf = [], []
        for incidence, by_constant in zip(self.columns, (open_by_constant, closed_by_constant), strict=True):
            lo, hi = by_constant.indptr[entity], by_constant.indptr[entity + 1]
            columns.append(incidence[:, by_constant.indices[lo:hi]])
            conf.append(by_constant.data[lo:hi])
        conf_all = np.concatenate(conf)
        if not conf_all.size:
            return found
        order = np.argsort(-conf_all, kind="stable")
        applied = sparse.hstack(columns, format="csc")[:, order]
        return merge(found, top_of_rows(applied.tocsr(), conf_all[order]))

    def __call__(self, entity: int, tail_asked: bool) -> np.ndarray:
        """Per candidate, the best confidence of the rules of :meth:`reduced`."""
        out = np.zeros(self.bodies.open.shape[0])
        candidates, top, _ = self.reduced(entity, tail_asked)
        out[candidates] = top[:, 0]
        return out

    def explain(self, entity: int, tail_asked: bool, candidate: int) -> list[tuple[tuple[str, int, int, bool], float]]:
        """The rules that give ``candidate`` its score for the query about ``entity``, as (rule, confidence as
        the score counts it: a dangling rule's times ``DANGLING``): a rule is (side, body, constant c, closed),
        ``side`` "tails" for r(X, c) :- body(X), "heads" for r(c, Y) :- body(Y), ``body`` an atom (open) or
        closed body; best first (see :meth:`text`)."""
        found = []
        asked, other = ("tails", "heads") if tail_asked else ("heads", "tails")
        open_, closed, _, _ = self.tables[asked]
        for is_closed, incidence, table in ((False, self.bodies.open, open_), (True, self.bodies.closed_rows, closed)):
            for body in incidence.indices[incidence.indptr[entity] : incidence.indptr[entity + 1]]:
                conf = table[body, candidate]
                if conf > 0:
                    found.append(((asked, int(body), candidate, is_closed), float(conf)))
        _, _, open_by_constant, closed_by_constant = self.tables[other]
        for is_closed, incidence, by_constant in (
            (False, self.bodies.open, open_by_constant),
            (True, self.bodies.closed_rows, closed_by_constant),
        ):
            held = set(incidence.indices[incidence.indptr[candidate] : incidence.indptr[candidate + 1]].tolist())
            lo, hi = by_constant.indptr[entity], by_constant.indptr[entity + 1]
            for body, conf in zip(by_constant.indices[lo:hi], by_constant.data[lo:hi], strict=True):
                if int(body) in held:
                    found.append(((other, int(body), entity, is_closed), float(conf)))
        return sorted(found, key=lambda rc: -rc[1])


def text(bodies: Bodies, relation: str, rule: tuple[str, int, int, bool], names: list[str], arrow: str = " :- ") -> str:
    """A rule of :meth:`Scorer.explain` or :func:`listing` written out: ``r(X,"c") :- s(X,"d")``, constants
    double-quoted as rules.dl writes them, atoms as the path rules' (:meth:`nlndl.paths.PathRule.text`); with
    ``arrow`` " <= " in AnyBURL's syntax (constants bare)."""
    side, body, constant, closed = rule
    quote = (lambda e: names[e]) if arrow == " <= " else (lambda e: quoted(names[e]))
    variable = "X" if side == "tails" else "Y"
    atom = int(bodies.closed_atom[body]) if closed else body
    relation_of, back = bodies.atoms[atom]
    other = quote(int(bodies.closed_constant[body])) if closed else ("A" if arrow == " <= " else "_")
    body_text = f"{relation_of}({other},{variable})" if back else f"{relation_of}({variable},{other})"
    head = (
        f"{relation}({variable},{quote(constant)})" if side == "tails" else f"{relation}({quote(constant)},{variable})"
    )
    return f"{head}{arrow}{body_text}"


def listing(rules: ConstantRules, limit: int) -> list[tuple[tuple[str, int, int, bool], int, int, float]]:
    """The ``limit`` rules of highest confidence (ties in a fixed order) as (rule, predicted, correct,
    confidence), for a rule file."""
    parts = []
    for name, side in (("tails", rules.tails), ("heads", rules.heads)):
        for closed, correct, predicted in (
            (False, side.open, side.open_predicted),
            (True, side.closed, side.closed_predicted),
        ):
            coo = correct.tocoo()
            parts.append((name, closed, coo.row, coo.col, coo.data, predicted[coo.row]))
    part = np.concatenate([np.full(p[2].size, k) for k, p in enumerate(parts)])
    body, constant = np.concatenate([p[2] for p in parts]), np.concatenate([p[3] for p in parts])
    correct, predicted = np.concatenate([p[4] for p in parts]), np.concatenate([p[5] for p in parts])
    conf = correct / (predicted + UNSEEN)
    order = np.lexsort((constant, body, part, -conf))[:limit]
    return [
        (
            (parts[part[i]][0], int(body[i]), int(constant[i]), parts[part[i]][1]),
            int(predicted[i]),
            int(correct[i]),
            float(conf[i]),
        )
        for i in order
    ]
