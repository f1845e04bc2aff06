"""Training on a subgraph: a world cut down to the constants around a few of its examples.

A recursive predicate over a connected world demands every pair of its atoms (each substitution reads atoms
whose extra variable is any neighbour), so training cost grows with the square of the world whatever the
layout. Trained on the subgraph that a breadth-first search over the facts reaches from the constants of
randomly drawn positive examples, the network sees a world of ``entities`` constants whose facts, examples
and closed world are the whole world's restricted to them; the rules it finds are then verified on the
whole world (kept by :func:`whole_world`), which never samples. Where they fail there, the subgraph is grown
from the counterexamples (:func:`grow`): their constants, the paths between them and a few neighbours. A
predicate without ``.closed`` has examples only where given: its subgraph is drawn first around them, both
kinds, with the paths that link each one's constants (:func:`around_given`).

``subgraph="auto"`` (:func:`auto_choice`) samples a world too large to train whole, down to
:func:`auto_entities` constants, and (:func:`deep_recursion`) a small one whose recursion is deep over
forest-shaped facts, down to SUBGRAPH_DEEP constants drawn first around its :func:`landmarks`.
"""

from __future__ import annotations

import math

import numpy as np

from nlndl.compiler.check import Checked, LearnSpec
from nlndl.compiler.crisp import Database
from nlndl.compiler.ground import GroundWorld, count_inputs, input_list, project, readable, world_domains
from nlndl.compiler.ir import WholeWorld
from nlndl.compiler.lowering import MAX_INPUTS
from nlndl.defaults import (
    SUBGRAPH_ABOVE,
    SUBGRAPH_DEEP,
    SUBGRAPH_ENTRIES,
    SUBGRAPH_GRID,
    SUBGRAPH_LANDMARK,
    SUBGRAPH_MOST,
    SUBGRAPH_TRY,
    SUBGRAPH_WORK,
)
from nlndl.defaults import SUBGRAPH_MIN as MIN_ENTITIES

GROW_EXAMPLES = 8  # counterexamples whose constants one growth step adds (drawn with the seed)
GROW_NEIGHBOURS = 4  # neighbours of each such constant added with it (the first by constant id)
GIVEN_TRIED = 256  # given examples of each kind that a subgraph's first constants are chosen among (around_given)
GROW_GRID = 4  # the most one growth step multiplies a world's grid (constants ** variables) by, past one example


def candidate_atoms(spec: LearnSpec, checked: Checked) -> int:
    """A learned predicate's candidate body atoms (:func:`~nlndl.compiler.ground.input_list`), never enumerated
    past MAX_INPUTS: there the bound of ``count_inputs``, as lowering refuses such a predicate before it
    enumerates them."""
    bound = count_inputs(spec, checked)
    return bound if bound > MAX_INPUTS else len(input_list(spec, checked).atoms)


def unpruned(checked: Checked, world: GroundWorld, weighed: bool = False) -> int:
    """The world's substitutions before any join prunes them: per learned predicate, its head atoms that
    training reads (every one of a closed predicate or of one that a learned body reads, which lowering
    demands beyond the examples; else its examples) times its extra variables' domain sizes. ``weighed``:
    each predicate's times its candidate atoms, the index entries of those substitutions."""
    closed = {name for name, _ in checked.sketch.closed}
    read = {q for spec in checked.learned.values() for q in spec.body}  # demanded beyond their examples
    total = 0
    for name, spec in checked.learned.items():
        sizes = [len(world.domains[t]) for t in spec.var_types]
        every = name in closed or name in read
        heads = math.prod(sizes[: spec.head_arity]) if every else sum(e[0] == name for e in world.examples)
        atoms = candidate_atoms(spec, checked) if weighed else 1
        total += heads * math.prod(sizes[spec.head_arity :]) * atoms
    return total


def auto_choice(checked: Checked, worlds: list[GroundWorld]) -> str:
    """``subgraph="auto"``: "whole" where no world's :func:`unpruned` substitutions pass SUBGRAPH_ABOVE and none's
    index entries pass SUBGRAPH_WORK (a few substitutions with many candidate atoms each can cost as much as
    many with few), "sample" where a world's substitutions pass SUBGRAPH_TRY, else "try" (lower the whole
    worlds and sample only where the work, index entries x steps, passes SUBGRAPH_WORK: joins prune most
    substitutions of a sparse world)."""
    if not checked.learned:
        return "whole"
    most = max((unpruned(checked, w) for w in worlds), default=0)
    if most > SUBGRAPH_TRY:
        return "sample"
    entries = max((unpruned(checked, w, weighed=True) for w in worlds), default=0)
    return "whole" if most <= SUBGRAPH_ABOVE and entries <= SUBGRAPH_WORK else "try"


def deep_recursion(checked: Checked, worlds: list[GroundWorld], steps: int) -> bool:
    """Whether a recursive learned predicate's default ``steps`` (compiler.steps.default_steps of the whole
    worlds) pass SUBGRAPH_DEEP over facts shaped as a forest (number lines, trees; every world's background
    facts linked as :func:`adjacency` links them, with no cycle): gradients through that many steps seldom find
    the recursion, and a subgraph of SUBGRAPH_DEEP constants around its landmarks holds whole derivations (a
    ball of a forest keeps every path between its constants), so its rules hold on the whole world or their
    counterexamples grow it."""
    if not checked.strata or not set(checked.learned) & checked.strata.recursive:
        return False
    if steps <= SUBGRAPH_DEEP:  # most worlds end here, scipy unimported
        return False
    from scipy.sparse.csgraph import connected_components

    learned = set(checked.learned)
    for world in worlds:
        nodes = constants(world)
        graph = adjacency(world, nodes, learned)
        if graph.diagonal().any():
            return False
        components, _ = connected_components(graph, directed=False)
        if graph.nnz // 2 != nodes.size - components:  # a forest has one link fewer than nodes per tree
            return False
    return True


def landmarks(world: GroundWorld, learned: set[str]) -> list[int]:
    """The constants of unary background relations with at most SUBGRAPH_LANDMARK facts (zero(0), empty(nil)):
    where a recursion over the facts bottoms out, so a subgraph drawn around them holds its base cases."""
    found: list[int] = []
    for name in sorted(world.db):
        facts = world.db[name]
        if name in learned or not facts or len(facts) > SUBGRAPH_LANDMARK or len(next(iter(facts))) != 1:
            continue
        found.extend(c for (c,) in sorted(facts) if c not in found)
    return found


def auto_entities(checked: Checked) -> int:
    """The constants of an automatic subgraph: those whose grid is about SUBGRAPH_GRID at the learned
    predicates' most variables, fewer where a predicate's grid times its candidate atoms would pass
    SUBGRAPH_ENTRIES, and never more than SUBGRAPH_MOST: at two variables the grid would allow 512, whose
    iterations take seconds, where 64 show a rule as well (counterexamples grow it where they do not)."""
    most = max(len(spec.var_types) for spec in checked.learned.values())
    entities = round(SUBGRAPH_GRID ** (1 / most))
    for spec in checked.learned.values():
        atoms = max(candidate_atoms(spec, checked), 1)
        entities = min(entities, round((SUBGRAPH_ENTRIES / atoms) ** (1 / len(spec.var_types))))
    return max(MIN_ENTITIES, min(entities, SUBGRAPH_MOST))


def constants(world: GroundWorld) -> np.ndarray:
    """Every constant of the world (facts and examples), ascending."""
    seen = {c for rel in world.db.values() for fact in rel for c in fact}
    seen.update(c for _, args, _, _ in world.examples for c in args)
    return np.array(sorted(seen), dtype=np.int64)


def adjacency(world: GroundWorld, nodes: np.ndarray, learned: set[str]):
    """The undirected graph over ``nodes`` (CSR) linking the constants of each extensional fact, each to the
    next one in the fact (so a fact's constants are connected)."""
    from scipy.sparse import coo_matrix  # imported here: only a subgraph needs scipy

    rows, cols = [], []
    for name, rel in world.db.items():
        if name in learned or not rel:
            continue
        facts = np.array(sorted(rel), dtype=np.int64)
        if facts.ndim < 2 or facts.shape[1] < 2:
            continue
        index = np.searchsorted(nodes, facts)
        rows.append(index[:, :-1].ravel())
        cols.append(index[:, 1:].ravel())
    n = nodes.size
    if not rows:
        return coo_matrix((n, n), dtype=np.int8).tocsr()
    r, c = np.concatenate(rows), np.concatenate(cols)
    data = np.ones(2 * r.size, dtype=np.int8)
    return coo_matrix((data, (np.concatenate([r, c]), np.concatenate([c, r]))), shape=(n, n)).tocsr()


def choose(
    world: GroundWorld,
    learned: set[str],
    entities: int,
    rng: np.random.Generator,
    start: set[int] | None = None,
    origins: list[int] | None = None,
) -> set[int]:
    """The constants of the subgraph: those of ``start``, then from each of ``origins`` in turn and then from
    the constants of positive examples drawn in a random order, each time the breadth-first order over the
    facts from one not yet chosen, until ``entities`` are chosen (or every constant that a positive example
    reaches is)."""
    from scipy.sparse.csgraph import breadth_first_order

    nodes = constants(world)
    if entities >= nodes.size:
        return set(nodes.tolist())
    chosen = np.isin(nodes, np.array(sorted(start or ()), dtype=np.int64))
    count = int(chosen.sum())
    if count >= entities:
        return set(nodes[chosen].tolist())
    graph = adjacency(world, nodes, learned)
    positives = [args for name, args, positive, _ in world.examples if positive and name in learned]
    firsts = [tuple(origins or ())] + [positives[i] for i in rng.permutation(len(positives)).tolist()]
    for first in firsts:
        for constant in first:
            origin = int(np.searchsorted(nodes, constant))
            if chosen[origin]:
                continue
            order = breadth_first_order(graph, origin, directed=False, return_predecessors=False)
            order = order[~chosen[order]][: entities - count]
            chosen[order] = True
            count += order.size
            if count >= entities:
                return set(nodes[chosen].tolist())
    return set(nodes[chosen].tolist())


def connecting(graph, nodes: np.ndarray, args: tuple[int, ...], before: dict[int, np.ndarray]) -> list[int]:
    """The node indices of a ground atom's constants and of a shortest path over the facts (``graph``, over
    ``nodes``) between each two consecutive ones: what a derivation of the atom may read. ``before`` keeps each
    source's breadth-first predecessors for the next call."""
    from scipy.sparse.csgraph import breadth_first_order

    index = np.searchsorted(nodes, np.array(args, dtype=np.int64))  # every constant of the world is a node
    path = index.tolist()
    for a, b in zip(index[:-1].tolist(), index[1:].tolist(), strict=True):
        if a == b:
            continue
        if a not in before:
            before[a] = breadth_first_order(graph, a, directed=False, return_predecessors=True)[1]
        at = b
        while at >= 0 and at != a:
            path.append(at)
            at = int(before[a][at])
    return path


def around_given(
    checked: Checked, world: GroundWorld, entities: int, rng: np.random.Generator, nearest: bool = True
) -> set[int]:
    """The first constants of a subgraph where a learned predicate without ``.closed`` has examples only where
    given: a positive and a negative example in turn, each time the one of its kind (of GIVEN_TRIED drawn)
    whose constants and :func:`connecting` paths add the fewest, while ``entities`` are not passed. Drawn
    around a few constants instead, such a subgraph holds a handful of the given examples, or only positives
    (a same-generation task over 300 people: 2 of 180, both positive; this way 19). Only examples of two or
    more constants, whose paths link them: a unary one's constant alone would come without the facts
    around it (those are drawn as balls, by :func:`choose`). With ``nearest`` False (labels that may be
    wrong), each kind's examples are taken in the order drawn: the negative examples whose constants lie
    nearest each other are disproportionately mislabelled positives (ancestor over 1,000 people with 5% of
    each class flipped: 8 of the 17 negatives such a subgraph held), so the nearest would not be a sample
    of the labels."""
    closed = {name for name, _ in checked.sketch.closed}
    given = [
        (args, positive)
        for name, args, positive, _ in world.examples
        if name in checked.learned and name not in closed and len(args) > 1
    ]
    nodes = constants(world)
    if not given or entities >= nodes.size:
        return set()
    graph = adjacency(world, nodes, set(checked.learned))
    before: dict[int, np.ndarray] = {}
    kinds = []
    for kind in (True, False):
        of_kind = [args for args, positive in given if positive == kind]
        drawn = [of_kind[i] for i in rng.permutation(len(of_kind))[:GIVEN_TRIED].tolist()]
        kinds.append([set(nodes[connecting(graph, nodes, args, before)].tolist()) for args in drawn])
    chosen: set[int] = set()
    turn = 0
    while any(kinds):
        pool = kinds[turn % 2] or kinds[(turn + 1) % 2]
        turn += 1
        needed = pool.pop(min(range(len(pool)), key=lambda i: len(pool[i] - chosen)) if nearest else 0)
        if len(chosen | needed) <= entities:
            chosen |= needed
        elif not nearest:  # the first that does not fit ends its kind: those that fit later are the nearest
            pool.clear()
        elif len(chosen) >= entities:
            break
    return chosen


def grow(
    checked: Checked, world: GroundWorld, kept: set[int], atoms: list[tuple[str, tuple[int, ...]]], seed: int
) -> set[int]:
    """``kept`` grown from counterexamples (ground atoms that the rules learned on the subgraph get wrong on the
    whole world): of up to GROW_EXAMPLES of them, drawn with ``seed``, the constants and the constants on a
    shortest path over the facts between each one's consecutive constants (a missed positive needs the
    facts that derive it), then up to GROW_NEIGHBOURS neighbours of each of those. Past the first
    counterexample, constants are added only while the grid (constants to the power of the learned
    predicates' most variables, what an iteration's cost follows) grows by at most GROW_GRID: a subgraph
    grows by steps, each asked for by rules that fail, rather than in one step to a world too large to train."""
    nodes = constants(world)
    graph = adjacency(world, nodes, set(checked.learned))
    rng = np.random.default_rng([seed, len(kept), len(atoms)])
    drawn = [atoms[i] for i in sorted(rng.permutation(len(atoms))[:GROW_EXAMPLES].tolist())]
    most = max((len(spec.var_types) for spec in checked.learned.values()), default=1)
    limit = max(len(kept) + 1, math.floor(len(kept) * GROW_GRID ** (1 / most)))
    inside = np.isin(nodes, np.array(sorted(kept), dtype=np.int64))
    added: list[int] = []  # node indices, in the order added

    def add(index: list[int], whole: bool = False) -> None:
        new = [i for i in dict.fromkeys(index) if not inside[i]]
        if not whole:
            new = new[: max(0, limit - int(inside.sum()))]
        inside[new] = True
        added.extend(new)

    paths = []
    before: dict[int, np.ndarray] = {}
    for k, (_, args) in enumerate(drawn):
        path = connecting(graph, nodes, args, before)
        if k == 0 or int(inside.sum()) + sum(not inside[i] for i in set(path)) <= limit:
            add(path, whole=k == 0)  # a counterexample's constants come in whole or not at all
            paths.append(path)
    for path in paths:
        for i in sorted(set(path)):
            row = graph.indices[graph.indptr[i] : graph.indptr[i + 1]]
            add(sorted(set(row.tolist()))[:GROW_NEIGHBOURS])
    return kept | set(nodes[sorted(added)].tolist())


def cut_short(checked: Checked, world: GroundWorld, db: Database, keep: set[int]) -> frozenset[int]:
    """The subgraph's constants (``keep``) whose projections its facts ``db`` read otherwise than the whole
    world's: a person whose children it left out is childless there (``!parent(A, _)``) but not in the world,
    so no rule could fit both what the subgraph says of such a constant and its label (a closed world's
    negatives among them); its example atoms are left unlabelled there (lowering). Every other atom over the
    subgraph's constants holds there as in the whole world: its facts are the world's facts among them."""
    cut: set[int] = set()
    for name in checked.projections:
        cut.update(c for (c,) in world.db[name] - db[name] if c in keep)
    return frozenset(cut)


def subgraph(
    checked: Checked,
    world: GroundWorld,
    entities: int,
    rng: np.random.Generator,
    start: set[int] | None = None,
    around_landmarks: bool = False,
    noisy: bool = False,
) -> tuple[GroundWorld, set[int]]:
    """The world restricted to :func:`choose`'s constants (and the constants chosen): the facts (background
    closure included) and the examples whose constants all lie among them, over domains recomputed from
    those. ``around_landmarks``: drawn first from the :func:`landmarks`; ``noisy``: the examples' labels may
    be wrong (see :func:`around_given`)."""
    learned = set(checked.learned)
    origins = landmarks(world, learned) if around_landmarks else None
    if not start and not around_landmarks:  # drawn, not grown; a deep recursion's is drawn from its base cases
        start = around_given(checked, world, entities, rng, nearest=not noisy)
    keep = choose(world, learned, entities, rng, start, origins)
    db = {name: {f for f in rel if all(c in keep for c in f)} for name, rel in world.db.items()}
    project(checked, db)  # edge(X, _) over the subgraph's edges, as the written rules read it there
    examples = [e for e in world.examples if all(c in keep for c in e[1])]
    domains = world_domains(checked, db, examples)
    cut = cut_short(checked, world, db, keep)
    return GroundWorld(world.name, world.span, db, examples, domains, unlabelled=cut), keep


def whole_world(checked: Checked, world: GroundWorld, sampled: GroundWorld) -> WholeWorld:
    """What verification needs of a world the training saw a subgraph of: the facts of every relation the
    learned rules can read, the given examples (constant ids, labels), and each closed predicate's grid."""
    learned = set(checked.learned)
    read = readable(checked) - learned
    arrays: dict[str, np.ndarray] = {}
    for name in sorted(read):
        arity = len(checked.relations[name].attributes)
        rows = sorted(world.db.get(name, ()))
        arrays[f"facts/{name}"] = np.array(rows, dtype=np.int64).reshape(len(rows), arity)
    for name in sorted(learned):
        given = [(args, positive) for p, args, positive, _ in world.examples if p == name]
        arity = len(checked.relations[name].attributes)
        arrays[f"examples/{name}"] = np.array([a for a, _ in given], dtype=np.int64).reshape(len(given), arity)
        arrays[f"labels/{name}"] = np.array([p for _, p in given], dtype=np.float32)
    closed = {
        name: math.prod(len(world.domains[a.type]) for a in checked.relations[name].attributes)
        for name, _ in checked.sketch.closed
    }
    given = (sum(e[0] in learned for e in sampled.examples), sum(e[0] in learned for e in world.examples))
    return WholeWorld(world.name, int(constants(world).size), int(constants(sampled).size), closed, arrays, given)
