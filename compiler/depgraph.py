"""The predicate dependency graph: strongly connected components, strata, recursive predicates.

An edge q -> p says p's definition reads q (``negative`` if through negation). Learned predicates
depend on every predicate their body may use. The one place that computes components: the checker (once per
sketch), the crisp evaluator (per rule set) and the default number of steps all ask it.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx


@dataclass(frozen=True)
class Strata:
    """Strata: the strongly connected components of the dependency graph, in evaluation order."""

    order: tuple[tuple[str, ...], ...]
    recursive: frozenset[str]
    negative_cycles: tuple[tuple[str, ...], ...]


def build_graph(edges: list[tuple[str, str, bool]], predicates: list[str]) -> nx.DiGraph:
    """A DiGraph with attribute ``negative`` on each edge (True if any dependency is negated)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(predicates)
    for src, dst, negative in edges:
        if graph.has_edge(src, dst):
            graph[src][dst]["negative"] |= negative
        else:
            graph.add_edge(src, dst, negative=negative)
    return graph


def stratify(graph: nx.DiGraph) -> Strata:
    """Order SCCs topologically; an SCC containing a negative edge makes the program unstratifiable."""
    condensed = nx.condensation(graph)
    members = condensed.graph["mapping"]
    components: dict[int, list[str]] = {}
    for node, comp in members.items():
        components.setdefault(comp, []).append(node)
    recursive: set[str] = set()
    bad: list[tuple[str, ...]] = []
    for nodes in components.values():
        if len(nodes) > 1 or graph.has_edge(nodes[0], nodes[0]):
            recursive.update(nodes)
        inside = set(nodes)
        if any(graph[u][v]["negative"] for u in inside for v in graph.successors(u) if v in inside):
            bad.append(tuple(sorted(nodes)))
    # strata: the SCCs in dependency order (ties broken by name, so the order is deterministic)
    ordered = nx.lexicographical_topological_sort(condensed, key=lambda c: min(components[c]))
    order = tuple(tuple(sorted(components[c])) for c in ordered)
    return Strata(order, frozenset(recursive), tuple(sorted(bad)))


def layers(graph: nx.DiGraph) -> int:
    """Components on the longest dependency chain (each recursive component counted once); 1 for no nodes."""
    condensed = nx.condensation(graph)
    return nx.dag_longest_path_length(condensed) + 1 if len(condensed) else 1
