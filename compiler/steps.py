"""The default number T of forward-chaining steps, derived from the dependency graph and the facts.

A derivation of a recursive predicate walks a chain of background facts one link per step (lt along succ,
connected along edge, length along cons), so T is the number of layers of learned predicates plus the
longest such chain. ``.steps`` or ``--steps`` override it where a derivation needs more.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

import networkx as nx

from nlndl.compiler.check import Checked
from nlndl.compiler.crisp import Database


def layers(checked: Checked) -> int:
    """Longest chain of learned predicates that depend on each other, each recursive component once."""
    learned = set(checked.learned)
    graph = nx.DiGraph()
    graph.add_nodes_from(learned)
    for spec in checked.learned.values():
        graph.add_edges_from((q, spec.predicate) for q in spec.body if q in learned and q != spec.predicate)
    condensed = nx.condensation(graph)
    return nx.dag_longest_path_length(condensed) + 1 if len(condensed) else 1


def longest_chain(databases: Iterable[Database], skip: set[str]) -> int:
    """Links in the longest path through one pair of argument positions of one relation, over every world
    (relations in ``skip`` left out). A cyclic one over n constants counts n - 1, its longest simple path
    at most."""
    longest = 0
    for db in databases:
        for name, facts in db.items():
            if name in skip or not facts:
                continue
            arity = len(next(iter(facts)))
            for i, j in combinations(range(arity), 2):
                graph = nx.DiGraph((f[i], f[j]) for f in facts if f[i] != f[j])
                if not graph:
                    continue
                if nx.is_directed_acyclic_graph(graph):
                    longest = max(longest, nx.dag_longest_path_length(graph))
                else:
                    longest = max(longest, graph.number_of_nodes() - 1)
    return longest


def default_steps(checked: Checked, databases: Iterable[Database]) -> int:
    """Forward-chaining steps: one per layer of learned predicates, plus, when a learned predicate is
    recursive, the longest chain of background facts a derivation can walk (see the module docstring)."""
    recursive = set(checked.learned) & checked.strata.recursive if checked.strata else set()
    return layers(checked) + (longest_chain(databases, set(checked.learned)) if recursive else 0)
