"""The predicate dependency graph: strongly connected components, strata, recursive predicates.

An edge q -> p says p's definition reads q (``negative`` if through negation). Learned predicates
depend on every predicate their body may use. The one place that computes components: the checker (once per
sketch), the crisp evaluator (per rule set) and the default number of steps all ask it.
"""

from __future__ import annotations

from dataclasses import dataclass

from nlndl.compiler import graphs

Graph = dict[str, dict[str, bool]]  # predicate -> the predicates that read it -> whether one reads it negated


@dataclass(frozen=True)
class Strata:
    """Strata: the strongly connected components of the dependency graph, in evaluation order."""

    order: tuple[tuple[str, ...], ...]
    recursive: frozenset[str]
    negative_cycles: tuple[tuple[str, ...], ...]


def build_graph(edges: list[tuple[str, str, bool]], predicates: list[str]) -> Graph:
    """The dependency graph of ``predicates`` and every predicate an edge names; an edge is negative if any
    dependency it stands for is negated."""
    graph: Graph = {p: {} for p in predicates}
    for src, dst, negative in edges:
        graph.setdefault(dst, {})
        out = graph.setdefault(src, {})
        out[dst] = out.get(dst, False) or negative
    return graph


def condensation(graph: Graph) -> tuple[list[list[str]], dict[int, set[int]]]:
    """The strongly connected components, and the acyclic graph of edges between them (by index)."""
    components = graphs.strongly_connected(graph)
    member = {node: i for i, nodes in enumerate(components) for node in nodes}
    edges: dict[int, set[int]] = {i: set() for i in range(len(components))}
    for src, out in graph.items():
        for dst in out:
            if member[src] != member[dst]:
                edges[member[src]].add(member[dst])
    return components, edges


def stratify(graph: Graph) -> Strata:
    """Order SCCs topologically; an SCC containing a negative edge makes the program unstratifiable."""
    components, edges = condensation(graph)
    recursive: set[str] = set()
    bad: list[tuple[str, ...]] = []
    for nodes in components:
        if len(nodes) > 1 or nodes[0] in graph[nodes[0]]:
            recursive.update(nodes)
        inside = set(nodes)
        if any(negative for u in inside for v, negative in graph[u].items() if v in inside):
            bad.append(tuple(sorted(nodes)))
    # strata: the SCCs in dependency order (ties broken by name, so the order is deterministic)
    ordered = graphs.topological_order(edges, key=lambda c: min(components[c]))
    assert ordered is not None  # a condensation has no cycle
    order = tuple(tuple(sorted(components[c])) for c in ordered)
    return Strata(order, frozenset(recursive), tuple(sorted(bad)))


def layers(graph: Graph) -> int:
    """Components on the longest dependency chain (each recursive component counted once); 1 for no nodes."""
    components, edges = condensation(graph)
    return (graphs.longest_path_length(edges) or 0) + 1 if components else 1
