"""Directed graphs as adjacency maps, and the few algorithms the compiler asks of them.

A graph is a dict from each node to the nodes its edges lead to (every node a key, successors in a dict or a
set). Strongly connected components (Tarjan), a topological order (Kahn), the longest path of an acyclic
graph, descendants, and connected components of an undirected graph: linear-time algorithms in a few lines
each, kept here so that compiling a sketch does not import networkx: its import took 0.29-0.33 s after torch
and clingo on a slow day, a sixth of a small task's whole run (``nlndl bench startup``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, TypeVar

N = TypeVar("N", bound=Hashable)


def strongly_connected(graph: Mapping[N, Iterable[N]]) -> list[list[N]]:
    """The strongly connected components, each a list of nodes, in reverse topological order (Tarjan's
    algorithm, iterative so that a long chain does not reach Python's recursion limit)."""
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    stack: list[N] = []
    on_stack: set[N] = set()
    components: list[list[N]] = []
    for root in graph:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(graph[root]))]
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(graph[succ])))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def topological_order(graph: Mapping[N, Iterable[N]], key: Callable[[N], Any] | None = None) -> list[N] | None:
    """The nodes, each after every node with an edge into it, or None if the graph has a cycle. With ``key``,
    of the nodes ready at each point the one of least key comes first (a deterministic order)."""
    indegree = dict.fromkeys(graph, 0)
    for node in graph:
        for succ in graph[node]:
            indegree[succ] += 1
    place = {node: i for i, node in enumerate(graph)}  # ties of equal key: the order the nodes were added

    def entry(node: N) -> tuple[Any, int, N]:
        return (key(node) if key else 0, place[node], node)

    ready = [entry(node) for node, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[N] = []
    while ready:
        node = heapq.heappop(ready)[2]
        order.append(node)
        for succ in graph[node]:
            indegree[succ] -= 1
            if indegree[succ] == 0:
                heapq.heappush(ready, entry(succ))
    return order if len(order) == len(indegree) else None


def longest_path_length(graph: Mapping[N, Iterable[N]]) -> int | None:
    """Edges on the longest path of an acyclic graph (0 for no edges), or None if the graph has a cycle."""
    order = topological_order(graph)
    if order is None:
        return None
    reach = dict.fromkeys(order, 0)  # edges on the longest path that ends at each node
    for node in order:
        for succ in graph[node]:
            reach[succ] = max(reach[succ], reach[node] + 1)
    return max(reach.values(), default=0)


def descendants(graph: Mapping[N, Iterable[N]], node: N) -> set[N]:
    """The nodes other than ``node`` that a path from it leads to (none if it is not in the graph)."""
    seen: set[N] = {node}
    todo = list(graph.get(node, ()))
    while todo:
        succ = todo.pop()
        if succ not in seen:
            seen.add(succ)
            todo.extend(graph[succ])
    return seen - {node}


def connected_components(size: int, edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The connected components of the undirected graph on nodes 0..size-1, each sorted, in order of their
    least node (union-find)."""
    parent = list(range(size))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = {}
    for i in range(size):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())
