"""Training on a subgraph: a world cut down to the constants around a few positive examples.

A recursive predicate over a connected world demands every pair of its atoms (each substitution reads atoms
whose extra variable is any neighbour), so training cost grows with the square of the world whatever the
layout. Trained on the subgraph that a breadth-first search over the facts reaches from the constants of
randomly drawn positive examples, the network sees a world of ``entities`` constants whose facts, examples
and closed world are the whole world's restricted to them; the rules it finds are then verified on the
whole world (kept by :func:`whole_world`), which never samples.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order

from nlndl.compiler.check import Checked
from nlndl.compiler.ground import GroundWorld, readable, world_domains
from nlndl.compiler.ir import WholeWorld

MIN_ENTITIES = 2  # a subgraph smaller than this holds no binary atom worth learning from


def constants(world: GroundWorld) -> np.ndarray:
    """Every constant of the world (facts and examples), ascending."""
    seen = {c for rel in world.db.values() for fact in rel for c in fact}
    seen.update(c for _, args, _, _ in world.examples for c in args)
    return np.array(sorted(seen), dtype=np.int64)


def adjacency(world: GroundWorld, nodes: np.ndarray, learned: set[str]):
    """The undirected graph over ``nodes`` (CSR) linking the constants of each extensional fact, each to the
    next one in the fact (so a fact's constants are connected)."""
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


def choose(world: GroundWorld, learned: set[str], entities: int, rng: np.random.Generator) -> set[int]:
    """The constants of the subgraph: from the constants of positive examples drawn in a random order, each
    time the breadth-first order over the facts from one not yet chosen, until ``entities`` are chosen (or
    every constant that a positive example reaches is)."""
    nodes = constants(world)
    if entities >= nodes.size:
        return set(nodes.tolist())
    graph = adjacency(world, nodes, learned)
    positives = [args for name, args, positive, _ in world.examples if positive and name in learned]
    chosen = np.zeros(nodes.size, dtype=bool)
    count = 0
    for i in rng.permutation(len(positives)).tolist():
        for constant in positives[i]:
            start = int(np.searchsorted(nodes, constant))
            if chosen[start]:
                continue
            order = breadth_first_order(graph, start, directed=False, return_predecessors=False)
            order = order[~chosen[order]][: entities - count]
            chosen[order] = True
            count += order.size
            if count >= entities:
                return set(nodes[chosen].tolist())
    return set(nodes[chosen].tolist())


def subgraph(checked: Checked, world: GroundWorld, entities: int, rng: np.random.Generator) -> GroundWorld:
    """The world restricted to :func:`choose`'s constants: the facts (background closure included) and the
    examples whose constants all lie among them, over domains recomputed from those."""
    learned = set(checked.learned)
    keep = choose(world, learned, entities, rng)
    db = {name: {f for f in rel if all(c in keep for c in f)} for name, rel in world.db.items()}
    examples = [e for e in world.examples if all(c in keep for c in e[1])]
    return GroundWorld(world.name, world.span, db, examples, world_domains(checked, db, examples))


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
    return WholeWorld(world.name, int(constants(world).size), int(constants(sampled).size), closed, arrays)
