"""The compiler's graph algorithms (compiler/graphs.py) agree with networkx on random graphs."""

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from nlndl.compiler import graphs
from nlndl.compiler.depgraph import build_graph, layers, stratify

edge_lists = st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=40)


def adjacency(nodes: int, edges: list[tuple[int, int]]) -> dict[int, set[int]]:
    graph: dict[int, set[int]] = {n: set() for n in range(nodes)}
    for a, b in edges:
        graph[a].add(b)
    return graph


def digraph(nodes: int, edges: list[tuple[int, int]]) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(range(nodes))
    graph.add_edges_from(edges)
    return graph


@settings(max_examples=200, deadline=None)
@given(edge_lists)
def test_components_order_and_paths_match_networkx(edges):
    ours, theirs = adjacency(12, edges), digraph(12, edges)
    components = graphs.strongly_connected(ours)
    assert sorted(sorted(c) for c in components) == sorted(sorted(c) for c in nx.strongly_connected_components(theirs))
    # reverse topological: no edge leads from a component to one listed after it
    place = {n: i for i, c in enumerate(components) for n in c}
    assert all(place[a] >= place[b] for a, b in edges)
    order = graphs.topological_order(ours)
    assert (order is None) == (not nx.is_directed_acyclic_graph(theirs))
    if order is not None:
        at = {n: i for i, n in enumerate(order)}
        assert sorted(order) == list(range(12)) and all(at[a] < at[b] for a, b in edges)
        assert graphs.longest_path_length(ours) == nx.dag_longest_path_length(theirs)
        key = lambda n: (n * 7) % 12  # noqa: E731
        assert graphs.topological_order(ours, key) == list(nx.lexicographical_topological_sort(theirs, key))
    else:
        assert graphs.longest_path_length(ours) is None
    for n in range(12):
        assert graphs.descendants(ours, n) == nx.descendants(theirs, n)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=15))
def test_connected_components_match_networkx(edges):
    graph = nx.Graph()
    graph.add_nodes_from(range(10))
    graph.add_edges_from(edges)
    assert graphs.connected_components(10, edges) == sorted(sorted(c) for c in nx.connected_components(graph))


def test_a_long_chain_needs_no_recursion():
    chain = {n: {n + 1} for n in range(20_000)} | {20_000: set()}
    assert len(graphs.strongly_connected(chain)) == 20_001
    assert graphs.longest_path_length(chain) == 20_000
    chain[20_000] = {0}
    assert graphs.strongly_connected(chain) == [list(range(20_000, -1, -1))]
    assert graphs.longest_path_length(chain) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from("abcdefg"), st.booleans()), max_size=20))
def test_strata_and_layers_match_networkx(edges):
    names = list("abcdefg")
    strata = stratify(build_graph(edges, names))
    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    for a, b, negative in edges:
        graph.add_edge(a, b, negative=graph.edges[a, b]["negative"] | negative if graph.has_edge(a, b) else negative)
    condensed = nx.condensation(graph)
    members: dict[int, list[str]] = {}
    for node, c in condensed.graph["mapping"].items():
        members.setdefault(c, []).append(node)
    expected = [
        tuple(sorted(members[c])) for c in nx.lexicographical_topological_sort(condensed, key=lambda c: min(members[c]))
    ]
    assert list(strata.order) == expected
    recursive = {n for ns in members.values() if len(ns) > 1 or graph.has_edge(ns[0], ns[0]) for n in ns}
    assert strata.recursive == recursive
    bad = sorted(
        tuple(sorted(ns)) for ns in members.values()
        if any(graph.edges[u, v]["negative"] for u in ns for v in ns if graph.has_edge(u, v))
    )  # fmt: skip
    assert list(strata.negative_cycles) == bad
    assert layers(build_graph(edges, names)) == nx.dag_longest_path_length(condensed) + 1
