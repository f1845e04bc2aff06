"""Rule weights fitted for ranking: the counted rules' confidences moved by weights learned on held-out triples.

A counted confidence is a rule's precision over everything it derives. Ranking asks something else: of the
candidates the rules derive for one query, which is the answer. So each rule that derives a candidate is read
as a membership of NLN's disjunction over the rules,

    m = sigmoid(logit(confidence) + w_rule + w_class),

``w_rule`` a weight of the path rule's own (the rules with a constant share one per body atom, kind, open or
closed, and use, the query's entity in the body or as the constant: there are hundreds of thousands of them),
``w_class`` one per direction asked and class of the candidate
(:mod:`nlndl.cardinality`: none, one, two or more known triples in its role), and a candidate scores the
top-aggregation of its rules' memberships (:func:`nlndl.ranking.combined`). The weights are fitted on the
relation's own training triples: a seeded share of them (``HELD_OUT``) is left out of the graph, the rules
are counted again on the rest, and each held-out triple is asked both ways; the loss is the cross-entropy of
the answer's score among the filtered candidates' (every entity that no rule derives scores 0), plus an L2
penalty that keeps a weight at 0 where the triples say nothing of it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from nlndl import cardinality, paths
from nlndl.constants import Bodies, ConstantRules
from nlndl.pairs import member, nonzero_keys
from nlndl.ranking import DAMPING, TOP, Classed, Reduced, ranks_of, top_of

HELD_OUT = 0.3  # the share of a relation's training triples held out to fit its weights
MOST_HELD = 3000  # and at most this many
MOST_ENTRIES = 12_000_000  # (query, candidate, rule) entries a fit reads at most: held-out queries dropped past it
STEPS = 150  # Adam steps of a fit
RATE = 0.1  # Adam's learning rate
TEMPERATURE = 0.02  # scores (0 to 1) over this are the logits of the cross-entropy
DECAY = 1e-4  # the L2 penalty on the weights
REORDER = 25  # steps between two sorts of each candidate's rules by membership (top-aggregation's order)
MIN_HELD = 20  # held-out triples below which no weights are fitted (all 0)
RECENT = 64  # queries whose candidates Weighed.constants keeps
NONE: Reduced = (np.zeros(0, np.int64), np.zeros((0, TOP)), np.zeros(0))  # no candidate


def logit(confidence: np.ndarray) -> np.ndarray:
    """log(c / (1 - c)), c kept within (1e-6, 1 - 1e-6)."""
    c = np.clip(np.asarray(confidence, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.log(c) - np.log1p(-c)


class Keys:
    """Each weight's key (a path rule's atoms, a kind of rule with a constant, a class) to its index."""

    def __init__(self) -> None:
        self.index: dict[Hashable, int] = {}

    def of(self, key: Hashable) -> int:
        return self.index.setdefault(key, len(self.index))

    def __len__(self) -> int:
        return len(self.index)


@dataclass
class Entries:
    """What queries' scores read: per (query, candidate, rule deriving it), the direction asked (``tail``: r(e,
    ?)), the entity asked about, the candidate, the rule's weight and class weight (indices into the weights)
    and its counted confidence in logit space."""

    tail: np.ndarray
    entity: np.ndarray
    candidate: np.ndarray
    weight: np.ndarray
    klass: np.ndarray
    logit: np.ndarray

    @classmethod
    def of(cls, parts: list[Entries]) -> Entries:
        if not parts:
            return cls(*(np.zeros(0, t) for t in (bool, np.int32, np.int32, np.int32, np.int32, np.float32)))
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__dataclass_fields__))

    def __len__(self) -> int:
        return int(self.candidate.size)

    def keys(self, n: int) -> np.ndarray:
        """Per entry, its (query, candidate) as one key: (tail * n + entity) * n + candidate."""
        return (self.tail.astype(np.int64) * n + self.entity) * n + self.candidate.astype(np.int64)

    def taken(self, keep: np.ndarray) -> Entries:
        return Entries(*(getattr(self, f)[keep] for f in self.__dataclass_fields__))


@dataclass
class RuleSet:
    """A relation's counted rules over one graph, as the weights read them: the path rules' entries for the
    entities asked about (gathered while they are counted, :meth:`take`) and the rules with a constant."""

    n: int
    keys: Keys
    classes: cardinality.Classes
    constants: ConstantRules
    bodies: Bodies
    heads: np.ndarray  # asked r(h, ?): a mask over entities
    tails: np.ndarray  # asked r(?, t)
    parts: list[Entries] = field(default_factory=list)
    budget: int | None = None  # entries held at most: past it, half the entities asked about are dropped
    seed: int = 0  # which half
    tables: dict[str, tuple[sparse.csr_matrix, ...]] = field(default_factory=dict)  # see constant_entries
    columns: tuple[sparse.csc_matrix, sparse.csc_matrix] | None = None  # the bodies' incidence by column
    size: int = 0  # the entries of parts
    class_weights: np.ndarray | None = None  # per direction and class, its weight's index (see klass)

    @classmethod
    def over(
        cls, keys: Keys, bodies: Bodies, target: str, known: sparse.csr_matrix, heads: np.ndarray, tails: np.ndarray
    ) -> RuleSet:
        """For ``target`` over a graph of one-atom ``bodies`` and ``known`` pairs, asked r(h, ?) for ``heads``
        and r(?, t) for ``tails``; path rules come in by :meth:`take`."""
        n = known.shape[0]
        mask = [np.zeros(n, dtype=bool) for _ in range(2)]
        mask[0][heads], mask[1][tails] = True, True
        constants = ConstantRules.mine(bodies, target, known)
        out = cls(n, keys, cardinality.classes(known), constants, bodies, mask[0], mask[1])
        for name, side in (("tails", constants.tails), ("heads", constants.heads)):
            by_body = side.weighed()  # (open, closed): body x constant, each rule's confidence
            out.tables[name] = (*by_body, *(t.T.tocsr() for t in by_body))
        out.columns = (bodies.open.tocsc(), bodies.closed)
        return out

    def klass(self, tail: np.ndarray, candidate: np.ndarray) -> np.ndarray:
        """The class weights' indices of candidates (:mod:`nlndl.cardinality`), by direction asked."""
        kind = np.where(tail, self.classes[0][candidate], self.classes[1][candidate])
        if self.class_weights is None:
            every = [self.keys.of(("class", t, c)) for t in (False, True) for c in range(cardinality.CLASSES)]
            self.class_weights = np.array(every, dtype=np.int64)
        return self.class_weights[tail.astype(np.int64) * cardinality.CLASSES + kind].astype(np.int32)

    def held(self) -> int:
        return self.size

    def halve(self) -> None:
        """Drop half the entities asked about (drawn with the seed), and their entries."""
        rng = np.random.default_rng(self.seed + len(self.parts))
        for mask in (self.heads, self.tails):
            asked = np.flatnonzero(mask)
            mask[rng.choice(asked, asked.size // 2, replace=False)] = False
        self.parts = [p.taken(np.where(p.tail, self.heads[p.entity], self.tails[p.entity])) for p in self.parts]
        self.size = sum(len(p) for p in self.parts)

    def take(self, key: Hashable, rows: np.ndarray, columns: np.ndarray, confidence: float) -> None:
        """A counted path rule (``key`` its atoms): its entries for the entities asked about."""
        weight = self.keys.of(("path", key))
        for tail, entity, candidate in ((True, rows, columns), (False, columns, rows)):
            keep = (self.heads if tail else self.tails)[entity]
            if not keep.any():
                continue
            size = int(keep.sum())
            flags = np.full(size, tail)
            cand = candidate[keep].astype(np.int32)
            self.parts.append(
                Entries(
                    flags,
                    entity[keep].astype(np.int32),
                    cand,
                    np.full(size, weight, np.int32),
                    self.klass(flags, cand),
                    np.full(size, logit(confidence), np.float32),
                )
            )
            self.size += size
        while self.budget is not None and self.held() > self.budget and self.heads.sum() + self.tails.sum() > 2:
            self.halve()

    def entries(self) -> Entries:
        """The entries of the path rules taken and of the rules with a constant, for the entities asked about;
        with a budget, entities are taken in a seeded order while their entries fit it."""
        path = Entries.of(self.parts)
        self.parts = [path]
        asked = [(True, e) for e in np.flatnonzero(self.heads)] + [(False, e) for e in np.flatnonzero(self.tails)]
        order = np.random.default_rng(self.seed).permutation(len(asked))
        held, parts, chosen = len(path), [], []
        for k in order:
            tail, entity = asked[k]
            found = self.constant_entries(int(entity), tail)
            if self.budget is not None and held + len(found) > self.budget:
                continue
            held += len(found)
            parts.append(found)
            chosen.append(asked[k])
        if self.budget is not None:  # the path rules' entries of the entities left out go too
            for mask in (self.heads, self.tails):
                mask[:] = False
            for tail, entity in chosen:
                (self.heads if tail else self.tails)[entity] = True
            path = path.taken(np.where(path.tail, self.heads[path.entity], self.tails[path.entity]))
        return Entries.of([path, *parts])

    def constant_entries(self, entity: int, tail: bool) -> Entries:
        """The rules with a constant answering r(entity, ?) (``tail``) or r(?, entity), as
        :meth:`nlndl.constants.Scorer.reduced` applies them: those whose body holds for the entity, and those
        whose constant it is, applied to every entity their body holds for."""
        asked, other = ("tails", "heads") if tail else ("heads", "tails")
        b = self.bodies
        candidates, confidences, weights = [], [], []
        for closed, (incidence, table) in enumerate(zip((b.open, b.closed_rows), self.tables[asked][:2], strict=True)):
            for body in incidence.indices[incidence.indptr[entity] : incidence.indptr[entity + 1]]:
                lo, hi = table.indptr[body], table.indptr[body + 1]
                if hi > lo:
                    atom = b.atoms[body if not closed else b.closed_atom[body]]
                    candidates.append(table.indices[lo:hi])
                    confidences.append(table.data[lo:hi])
                    weights.append(np.full(hi - lo, self.keys.of(("constant", tail, "body", bool(closed), atom))))
        for closed, (incidence, table) in enumerate(zip(self.columns, self.tables[other][2:], strict=True)):
            lo, hi = table.indptr[entity], table.indptr[entity + 1]
            for body, confidence in zip(table.indices[lo:hi], table.data[lo:hi], strict=True):
                column = incidence.indices[incidence.indptr[body] : incidence.indptr[body + 1]]
                atom = b.atoms[body if not closed else b.closed_atom[body]]
                candidates.append(column)
                confidences.append(np.full(column.size, confidence))
                weights.append(np.full(column.size, self.keys.of(("constant", tail, "constant", bool(closed), atom))))
        if not candidates:
            return Entries.of([])
        cand = np.concatenate(candidates).astype(np.int32)
        flags = np.full(cand.size, tail)
        return Entries(
            flags,
            np.full(cand.size, entity, np.int32),
            cand,
            np.concatenate(weights).astype(np.int32),
            self.klass(flags, cand),
            logit(np.concatenate(confidences)),
        )


def top_weights(keys: np.ndarray, membership: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Top-aggregation's weight of each entry (1 for a candidate's best rule, ``DAMPING`` for its next
    ``TOP - 1``, 0 after), given ``keys`` (:meth:`Entries.keys`) and memberships; and the order that sorts
    the entries by key, best membership first."""
    order = np.lexsort((-membership, keys))
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if keys.size else np.zeros(0, np.int64)
    position = np.arange(keys.size) - np.repeat(starts, np.diff(np.append(starts, keys.size)))
    weight = np.empty(keys.size)
    weight[order] = np.where(position == 0, 1.0, np.where(position < TOP, DAMPING, 0.0))
    return weight, order


def fit(entries: Entries, held: np.ndarray, known: np.ndarray, n: int, size: int) -> np.ndarray:
    """The ``size`` weights that fit ``entries`` to the ``held`` (head, tail) pairs asked both ways; ``known``:
    the keys (head * n + tail, ascending) of the pairs filtered (every known pair of the relation but the
    answer). Deterministic on the CPU."""
    import torch  # imported here: ranking without fitted weights needs none of it

    keys = entries.keys(n)
    pairs, pair_of = np.unique(keys, return_inverse=True)
    query, candidate = pairs // n, pairs % n
    tail, entity = query // n == 1, query % n
    head_of, tail_of = np.where(tail, entity, candidate), np.where(tail, candidate, entity)
    filtered = member(head_of * n + tail_of, known)  # the answer too: it joins the partition apart
    queries, query_of = np.unique(query, return_inverse=True)
    unscored = n - np.bincount(query_of, minlength=queries.size)  # per query, the entities no rule derives
    asked = np.concatenate([n + held[:, 0], held[:, 1]])  # r(h, ?) then r(?, t)
    answers = np.concatenate([(n + held[:, 0]) * n + held[:, 1], held[:, 1] * n + held[:, 0]])
    found = member(answers, pairs)
    if not found.any():
        return np.zeros(size)
    # only the entries of candidates a loss reads (not filtered, or an answer) are kept
    read = ~filtered
    read[np.searchsorted(pairs, answers[found])] = True
    kept = read[pair_of]
    entries, keys = entries.taken(kept), keys[kept]
    pairs, pair_of = np.unique(keys, return_inverse=True)
    open_ = torch.tensor(~filtered[read], dtype=torch.float64)
    query_of = np.searchsorted(queries, pairs // n)
    answer_pair = torch.tensor(np.searchsorted(pairs, answers[found]))
    answer_query = torch.tensor(np.searchsorted(queries, asked[found]))
    unscored_t = torch.tensor(unscored, dtype=torch.float64)[answer_query]
    columns = [torch.tensor(x) for x in (entries.logit, entries.weight, entries.klass, pair_of)]
    query_index = torch.tensor(query_of)
    weights = torch.zeros(size, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.Adam([weights], lr=RATE)
    for step in range(STEPS):
        if step % REORDER == 0:  # the entries top-aggregation weighs, and their weights, until the next sort
            with torch.no_grad():
                membership = torch.sigmoid(columns[0] + weights[columns[1]] + weights[columns[2]])
            top = top_weights(keys, membership.numpy())[0]
            active = np.flatnonzero(top > 0)
            base, weight_of, class_of, pair_index = (c[active] for c in columns)
            damping = torch.tensor(top[active])
        membership = torch.sigmoid(base + weights[weight_of] + weights[class_of])
        miss = torch.zeros(pairs.size, dtype=torch.float64).index_add(
            0, pair_index, torch.log1p(-(membership * damping).clamp(max=1 - 1e-9))
        )
        logits = -torch.expm1(miss) / TEMPERATURE  # at most 1 / TEMPERATURE: exp stays finite in float64
        partition = torch.zeros(queries.size, dtype=torch.float64).index_add(0, query_index, torch.exp(logits) * open_)
        partition = partition[answer_query] + unscored_t + torch.exp(logits[answer_pair])
        loss = (torch.log(partition) - logits[answer_pair]).mean() + DECAY * (weights**2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return weights.detach().numpy().copy()


def held_out(pairs: np.ndarray, seed: int) -> np.ndarray:
    """Which of a relation's training ``pairs`` (sorted) are held out to fit its weights: ``HELD_OUT`` of them,
    at most ``MOST_HELD``, drawn with the seed."""
    count = min(int(HELD_OUT * len(pairs)), MOST_HELD)
    mask = np.zeros(len(pairs), dtype=bool)
    mask[np.random.default_rng(seed).choice(len(pairs), count, replace=False)] = True
    return mask


def fitted(matrices: dict[str, sparse.csr_matrix], target: str, length: int, seed: int) -> tuple[Keys, np.ndarray]:
    """The weights of ``target``'s rules over a graph of ``matrices`` (relation -> known pairs, 0/1): held-out
    pairs drawn from the target's (:func:`held_out`), the path rules of up to ``length`` atoms and the rules
    with a constant counted without them, and :func:`fit` on them asked both ways; all 0 where fewer than
    ``MIN_HELD`` are held out. The keys say which weight is which rule's."""
    known = sparse.csr_matrix(matrices[target])
    n = known.shape[0]
    known_keys = nonzero_keys(known)
    pairs = np.stack([known_keys // n, known_keys % n], axis=1)
    keys = Keys()
    mask = held_out(pairs, seed)
    held = pairs[mask]
    if len(held) < MIN_HELD:
        return keys, np.zeros(0)
    rest = pairs[~mask]
    graph = dict(matrices)
    graph[target] = sparse.csr_matrix((np.ones(len(rest), np.float32), (rest[:, 0], rest[:, 1])), shape=(n, n))
    rules = RuleSet.over(keys, Bodies.of(graph), target, graph[target], held[:, 0], held[:, 1])
    rules.budget, rules.seed = MOST_ENTRIES, seed
    for rule in paths.each(graph, target, length, seed):
        rules.take((rule.atoms, rule.reflexive), rule.rows, rule.columns, rule.confidence)
    entries = rules.entries()
    return keys, fit(entries, held, known_keys, n, len(keys))


class Weighed(Classed):
    """A relation's rules ranked with fitted weights, for the entities asked about: a :class:`Classed` whose path
    rules are folded as they are counted (:meth:`take`) with their memberships per direction and class of
    candidate in place of its confidences; the rules with a constant applied per query (:meth:`constants`)."""

    def __init__(self, rules: RuleSet, weights: np.ndarray, known: sparse.csr_matrix) -> None:
        """``rules`` over the whole graph (none taken), ``weights`` fitted for ``rules.keys``."""
        super().__init__((rules.n, rules.n), known, np.flatnonzero(rules.heads), np.flatnonzero(rules.tails))
        self.rules, self.weights = rules, weights
        self.recent: dict[tuple[int, bool], Reduced] = {}  # the last queries' (see constants)

    def weight(self, key: Hashable) -> float:
        """The fitted weight of ``key``; 0 for a rule the held-out graph did not count."""
        at = self.rules.keys.index.get(key)
        return float(self.weights[at]) if at is not None and at < self.weights.size else 0.0

    def take(self, key: Hashable, rows: np.ndarray, columns: np.ndarray, confidence: float) -> None:
        """A counted path rule (``key`` its atoms) deriving (rows, columns)."""
        base = float(logit(confidence)) + self.weight(("path", key))
        keys = rows * self.rules.n + columns
        for side, into in enumerate((self.tails, self.heads)):
            kind = self.classes[side][columns if side == 0 else rows]
            keep = into.keeps(rows, columns)
            for of_class in range(cardinality.CLASSES):
                chosen = kind == of_class if keep is None else keep & (kind == of_class)
                if chosen.any():
                    offset = self.weight(("class", side == 0, of_class))
                    into.add_keys(keys[chosen], 1.0 / (1.0 + np.exp(-(base + offset))))

    def constants(self, entity: int, tail: bool) -> Reduced:
        """The candidates the rules with a constant derive for the query about ``entity``, with their best
        memberships and their noisy-or (:data:`nlndl.ranking.Extra`). The last ``RECENT`` are kept: many
        queries ask about one entity (every r(?, male) of a gender relation)."""
        if (entity, tail) in self.recent:
            return self.recent[entity, tail]
        found = self.rules.constant_entries(entity, tail)
        if len(self.rules.keys) > self.weights.size:  # kinds the held-out graph did not count: weight 0
            self.weights = np.concatenate([self.weights, np.zeros(len(self.rules.keys) - self.weights.size)])
        weights = self.weights
        membership = 1.0 / (1.0 + np.exp(-(found.logit + weights[found.weight] + weights[found.klass])))
        out = top_of(found.candidate.astype(np.int64), membership) if len(found) else NONE
        if len(self.recent) >= RECENT:
            del self.recent[next(iter(self.recent))]
        self.recent[entity, tail] = out
        return out


def ranked(
    weighed: Weighed, test: list[tuple[int, int]], known: set[tuple[int, int]], prior: tuple[np.ndarray, np.ndarray]
) -> np.ndarray:
    """The ranks of every test pair asked both ways by ``weighed``'s top-aggregation, by
    :func:`nlndl.ranking.ranks_of`: the other ``known`` pairs filtered, ties by ``prior`` and then at the mean
    rank."""
    return ranks_of([(weighed, "top", True)], test, known, prior, weighed.constants)[0]
