"""The default number T of forward-chaining steps, derived from the dependency graph and the facts.

A derivation of a recursive predicate walks a chain of background facts one link per step (lt along succ,
connected along edge, length along cons), so T is the number of layers of learned predicates plus the
longest such chain: an acyclic relation's longest path, a cyclic one's longest shortest path (a derivation
reaches each pair it links by the shortest way). ``.steps`` or ``--steps`` override it where a derivation needs more.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

import numpy as np

from nlndl.compiler import depgraph, graphs
from nlndl.compiler.check import Checked
from nlndl.compiler.crisp import Database

MAX_SOURCES = 2000  # breadth-first searches per cyclic relation: exact up to this many constants,
SEARCH_WORK = 200_000_000  # and fewer on larger graphs: sources x (nodes + edges) at most this


def layers(checked: Checked) -> int:
    """Longest chain of learned predicates that depend on each other, each recursive component once."""
    learned = set(checked.learned)
    edges = [
        (q, spec.predicate, False)
        for spec in checked.learned.values()
        for q in spec.body
        if q in learned and q != spec.predicate
    ]
    return depgraph.layers(depgraph.build_graph(edges, sorted(learned)))


def longest_chain(databases: Iterable[Database], skip: set[str]) -> int:
    """Links in the longest chain through one pair of argument positions of one relation, over every world
    (relations in ``skip`` left out): an acyclic one's longest path; a cyclic one's longest shortest path,
    a constant back to itself included (the most links a derivation needs to reach any pair it links)."""
    longest = 0
    for db in databases:
        for name, facts in db.items():
            if name in skip or not facts:
                continue
            arity = len(next(iter(facts)))
            for i, j in combinations(range(arity), 2):
                graph: dict[object, set[object]] = {}
                for f in facts:
                    if f[i] != f[j]:
                        graph.setdefault(f[j], set())
                        graph.setdefault(f[i], set()).add(f[j])
                if not graph:
                    continue
                acyclic = graphs.longest_path_length(graph)
                longest = max(longest, acyclic if acyclic is not None else longest_shortest_path(graph))
    return longest


def longest_shortest_path(graph: dict[object, set[object]]) -> int:
    """The most links on a shortest path between two connected nodes, or from a node back to itself, by
    breadth-first search from every node (on graphs past ``MAX_SOURCES`` nodes or ``SEARCH_WORK``, from
    fewer, evenly spread: a lower bound there). An n-node cycle: n, where n - 1 undercounts a walk around it."""
    from scipy.sparse import csr_matrix  # imported here: most sketches' steps need no cyclic graph
    from scipy.sparse.csgraph import shortest_path

    nodes = sorted(graph, key=str)
    edges = [(u, v) for u, out in graph.items() for v in out]
    sources = min(MAX_SOURCES, max(16, SEARCH_WORK // (len(nodes) + len(edges))))
    index = {node: k for k, node in enumerate(nodes)}
    tail = np.array([index[u] for u, _ in edges], dtype=np.int64)
    head = np.array([index[v] for _, v in edges], dtype=np.int64)
    adjacency = csr_matrix((np.ones(len(tail)), (tail, head)), shape=(len(nodes), len(nodes)))
    picked = np.unique(np.linspace(0, len(nodes) - 1, min(sources, len(nodes))).astype(np.int64))
    longest = 0
    rows = max(1, min(256, 2**24 // len(nodes)))  # a chunk's distance matrix: at most 128 MiB
    for chunk in np.array_split(picked, -(-len(picked) // rows)):
        dist = shortest_path(adjacency, unweighted=True, indices=chunk)  # (len(chunk), n), inf if unreachable
        reached = dist[np.isfinite(dist)]
        longest = max(longest, int(reached.max()) if reached.size else 0)
        # back to a source: the shortest path to one of the nodes with an edge into it, plus that edge
        row = np.full(len(nodes), -1)
        row[chunk] = np.arange(len(chunk))
        into = row[head] >= 0
        back = np.full(len(chunk), np.inf)
        np.minimum.at(back, row[head[into]], dist[row[head[into]], tail[into]] + 1)
        back = back[np.isfinite(back)]
        longest = max(longest, int(back.max()) if back.size else 0)
    return longest


def default_steps(checked: Checked, databases: Iterable[Database]) -> int:
    """Forward-chaining steps: one per layer of learned predicates, plus, when a learned predicate is
    recursive, the longest chain of background facts a derivation can walk (see the module docstring)."""
    recursive = set(checked.learned) & checked.strata.recursive if checked.strata else set()
    return layers(checked) + (longest_chain(databases, set(checked.learned)) if recursive else 0)
