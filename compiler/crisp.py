"""A crisp Datalog evaluator: stratified, semi-naive, over interned constants.

Used for background rules before learning and, later, to check learned programs. Relations are
sets of int tuples; rules are in a small normal form (:class:`Rule`) independent of the parser.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from nlndl.compiler.depgraph import build_graph, stratify
from nlndl.compiler.graphs import connected_components
from nlndl.compiler.path_join import PathJoin, conjunction_of, path_of

Arg = tuple[str, int | str]  # ("v", name) or ("c", constant id)
Database = dict[str, set[tuple[int, ...]]]


@dataclass(frozen=True)
class BodyAtom:
    predicate: str
    args: tuple[Arg, ...]
    negated: bool = False


@dataclass(frozen=True)
class Rule:
    head: str
    head_args: tuple[Arg, ...]
    body: tuple[BodyAtom, ...]


def _strata(rules: list[Rule]) -> list[list[Rule]]:
    """Rules grouped by the SCC of their head, in dependency order (assumes a stratifiable program)."""
    edges = [(atom.predicate, rule.head, atom.negated) for rule in rules for atom in rule.body]
    predicates = sorted({rule.head for rule in rules} | {edge[0] for edge in edges})
    rank = {p: i for i, component in enumerate(stratify(build_graph(edges, predicates)).order) for p in component}
    groups: dict[int, list[Rule]] = defaultdict(list)
    for rule in rules:
        groups[rank[rule.head]].append(rule)
    return [groups[k] for k in sorted(groups)]


def _match(atom: BodyAtom, fact: tuple[int, ...], binding: dict[str, int]) -> dict[str, int] | None:
    out = binding
    for (kind, value), const in zip(atom.args, fact, strict=True):
        if kind == "c":
            if value != const:
                return None
        elif value == "_":
            continue
        elif value in out:
            if out[value] != const:
                return None
        else:
            if out is binding:
                out = dict(binding)
            out[value] = const  # type: ignore[index]
    return out


def _ground(args: tuple[Arg, ...], binding: dict[str, int]) -> tuple[int, ...]:
    return tuple(value if kind == "c" else binding[value] for kind, value in args)  # type: ignore[misc]


def _holds(atom: BodyAtom, binding: dict[str, int], db: Database) -> bool:
    """Whether some fact matches ``atom`` under ``binding`` (``_`` matches anything)."""
    rel = db.get(atom.predicate, set())
    if all(kind == "c" or value != "_" for kind, value in atom.args):
        return _ground(atom.args, binding) in rel
    return any(_match(atom, fact, binding) is not None for fact in rel)


def _variables(atom: BodyAtom) -> set[str]:
    return {v for kind, v in atom.args if kind == "v" and v != "_"}  # type: ignore[misc]


def _components(body: tuple[BodyAtom, ...]) -> list[list[int]]:
    """Body atoms grouped by shared variables (connected components), each in body order."""
    shared: list[tuple[int, int]] = []
    owner: dict[str, int] = {}
    for i, atom in enumerate(body):
        for v in _variables(atom):
            if v in owner:
                shared.append((owner[v], i))
            owner[v] = i
    return connected_components(len(body), shared)


def _bound_positions(atom: BodyAtom, bound: set[str] | dict[str, int]) -> tuple[int, ...]:
    """The argument positions of ``atom`` that a constant or a variable of ``bound`` fixes."""
    return tuple(p for p, (kind, v) in enumerate(atom.args) if kind == "c" or (v in bound and v != "_"))


def _join_order(
    body: tuple[BodyAtom, ...], positives: list[int], sizes: list[int], fanout: Callable[[int, tuple[int, ...]], float]
) -> list[int]:
    """Positive atoms in a greedy join order: next an atom whose arguments are all bound (a membership test),
    else the one expected to match the fewest facts per binding so far (``fanout``: its facts over the
    distinct values at the bound positions; all its facts where none is bound)."""
    order: list[int] = []
    bound: set[str] = set()
    left = list(positives)

    def score(i: int) -> tuple[int, float, int]:
        positions = _bound_positions(body[i], bound)
        if len(positions) == len(body[i].args):
            return (0, 0.0, sizes[i])
        return (1, fanout(i, positions) if positions else float(sizes[i]), sizes[i])

    while left:
        best = min(left, key=score)
        left.remove(best)
        order.append(best)
        bound |= _variables(body[best])
    return order


def _solve(
    body: tuple[BodyAtom, ...],
    sources: list[set[tuple[int, ...]]],
    db: Database,
    lead: bool = False,
    wanted: set[str] | None = None,
) -> Iterator[dict[str, int]]:
    """All bindings satisfying ``body``; positive atom i reads ``sources[i]``, negations read ``db``. With
    ``wanted`` (the variables the caller reads), one binding per distinct value of them: once they are all
    bound, the rest of the body is a test that the first completion passes (a path rule's head pair joined
    by many paths is found once, not once per path).

    Atoms are joined in a greedy order (:func:`_join_order`; with ``lead``, the first atom first); each is
    hash-indexed once per call on the positions bound there.
    """
    sizes = [len(s) for s in sources]
    if lead:
        sizes[0] = -1  # the smallest: joined first
    indexes: dict[tuple[int, tuple[int, ...]], dict[tuple[int, ...], list[tuple[int, ...]]]] = {}

    def index_of(i: int, positions: tuple[int, ...]) -> dict[tuple[int, ...], list[tuple[int, ...]]]:
        index = indexes.get((i, positions))
        if index is None:
            index = indexes[i, positions] = defaultdict(list)
            for fact in sources[i]:
                index[tuple(fact[p] for p in positions)].append(fact)
        return index

    def fanout(i: int, positions: tuple[int, ...]) -> float:
        return -1.0 if sizes[i] < 0 else sizes[i] / max(1, len(index_of(i, positions)))

    positives = _join_order(body, [i for i, a in enumerate(body) if not a.negated], sizes, fanout)
    negatives = [a for a in body if a.negated]

    def lookup(k: int, positions: tuple[int, ...], key: tuple[int, ...]) -> Iterable[tuple[int, ...]]:
        rel = sources[positives[k]]
        if not positions:
            return rel
        if len(positions) == len(body[positives[k]].args):  # every argument bound: a membership test
            return (key,) if key in rel else ()
        return index_of(positives[k], positions).get(key, ())

    def walk(k: int, binding: dict[str, int]) -> Iterator[dict[str, int]]:
        if k == len(positives):
            if not any(_holds(a, binding, db) for a in negatives):
                yield binding
            return
        if wanted is not None and wanted.issubset(binding):
            yield from itertools.islice(extend(k, binding), 1)
        else:
            yield from extend(k, binding)

    def extend(k: int, binding: dict[str, int]) -> Iterator[dict[str, int]]:
        atom = body[positives[k]]
        positions = _bound_positions(atom, binding)
        key = tuple(atom.args[p][1] if atom.args[p][0] == "c" else binding[atom.args[p][1]] for p in positions)
        for fact in lookup(k, positions, key):  # type: ignore[arg-type]
            extended = _match(atom, fact, binding)
            if extended is not None:
                yield from walk(k + 1, extended)

    yield from walk(0, {})


def _fire(rule: Rule, sources: list[set[tuple[int, ...]]], db: Database, into: Database) -> None:
    """Add to ``into`` every head fact of ``rule`` (body atoms read ``sources``) that ``db`` lacks.

    Each connected component of the body is solved on its own and projected on the head's variables:
    a component without head variables is only a yes/no condition, so unrelated atoms (``tail(C, D)``
    beside ``lte(E, F)``) never multiply into a cross product of bindings.
    """
    head_vars = {v for kind, v in rule.head_args if kind == "v"}
    parts: list[tuple[list[str], set[tuple[int, ...]]]] = []
    for component in _components(rule.body):
        body = tuple(rule.body[i] for i in component)
        wanted = sorted(head_vars & set().union(*(_variables(a) for a in body)))
        found: set[tuple[int, ...]] = set()
        for binding in _solve(body, [sources[i] for i in component], db, wanted=set(wanted)):
            found.add(tuple(binding[v] for v in wanted))
        if not found:
            return
        parts.append((wanted, found))
    for combo in itertools.product(*(found for _, found in parts)):
        binding = {
            v: c for (wanted, _), values in zip(parts, combo, strict=True) for v, c in zip(wanted, values, strict=True)
        }
        fact = _ground(rule.head_args, binding)
        if fact not in db[rule.head]:
            into[rule.head].add(fact)


def evaluate(facts: Database, rules: Iterable[Rule]) -> Database:
    """The least model of ``facts`` and stratified ``rules`` (a new dict; inputs untouched)."""
    db: Database = {name: set(rel) for name, rel in facts.items()}
    for stratum in _strata(list(rules)):
        heads = {r.head for r in stratum}
        for head in heads:
            db.setdefault(head, set())
        delta: Database = {h: set() for h in heads}
        for rule in stratum:  # first round: every rule on the full relations
            _fire(rule, [db.get(a.predicate, set()) for a in rule.body], db, delta)
        for head in heads:
            db[head] |= delta[head]
        while any(delta.values()):
            new: Database = {h: set() for h in heads}
            for rule in stratum:
                recursive = [i for i, a in enumerate(rule.body) if not a.negated and a.predicate in heads]
                for i in recursive:  # semi-naive: one recursive atom reads only the last delta
                    sources = [
                        delta[a.predicate] if j == i else db.get(a.predicate, set()) for j, a in enumerate(rule.body)
                    ]
                    _fire(rule, sources, db, new)
            for head in heads:
                db[head] |= new[head]
            delta = new
    return db


def reads_no_head(rules: Iterable[Rule]) -> bool:
    """Whether no rule body reads a rule head: one stratum of rules over the facts alone, whose model at an
    atom needs nothing but that atom's own rules (:func:`derived_at`)."""
    rules = list(rules)
    heads = {r.head for r in rules}
    return not any(a.predicate in heads for r in rules for a in r.body)


def derived_at(
    facts: Database,
    rules: Iterable[Rule],
    atoms: Iterable[tuple[str, tuple[int, ...]]],
    paths: PathJoin | None = None,
) -> set:
    """Those of ``atoms`` that ``rules`` derive from ``facts``, for rules whose bodies read no rule head
    (:func:`reads_no_head`): each rule solved with an atom of the asked ones in front of its body, which is the
    least model at those atoms without computing the rest of it (on a knowledge graph a rule over a hub
    derives millions of atoms that no example asks about). A path rule is decided for all its asked atoms at
    once by sorted joins (:mod:`nlndl.compiler.path_join`); ``paths``, the facts' arrays for those joins where the
    caller keeps them between calls on the same facts."""
    asked: dict[str, set[tuple[int, ...]]] = defaultdict(set)
    for predicate, args in atoms:
        asked[predicate].add(args)
    out = {(p, args) for p, wanted in asked.items() for args in wanted & facts.get(p, set())}
    paths, arrays = paths if paths is not None else PathJoin(facts), {}
    for rule in rules:
        wanted = asked.get(rule.head)
        if not wanted:
            continue
        steps = path_of(rule.head_args, rule.body)
        if steps is not None or conjunction_of(rule.head_args, rule.body) is not None:
            if rule.head not in arrays:  # decided for every asked atom at once
                arrays[rule.head] = np.array(sorted(wanted), dtype=np.int64).reshape(-1, 2)
            if steps is not None:  # a path rule: its walks deduplicated step by step
                derived = paths.derived(steps, arrays[rule.head])
            else:
                derived = paths.conjunction(rule.head_args, rule.body, arrays[rule.head])
            if derived is not None:
                out |= {(rule.head, tuple(args)) for args in arrays[rule.head][derived].tolist()}
                continue
        head_vars = {v for kind, v in rule.head_args if kind == "v"}
        joined: list[BodyAtom] = []
        for component in _components(rule.body):  # one without head variables is a yes/no condition, once
            body = tuple(rule.body[i] for i in component)
            if head_vars & set().union(*(_variables(a) for a in body)):
                joined += body
            elif next(_solve(body, [facts.get(a.predicate, set()) for a in body], facts), None) is None:
                break
        else:
            body = (BodyAtom("\0asked", rule.head_args), *joined)  # no relation's name
            sources = [wanted, *(facts.get(a.predicate, set()) for a in joined)]
            found = _solve(body, sources, facts, wanted=head_vars)
            out |= {(rule.head, _ground(rule.head_args, binding)) for binding in found}
    return out
