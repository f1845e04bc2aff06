"""The import graph is one-way: root <- compiler <- runtime <- application <- bench <- cli, no cycles, and
the data path's stages never import a later stage. Read from the modules' own import statements."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"compiler": "nlndl.compiler", "runtime": "nlndl.runtime", "nlndl": "nlndl"}
BASE = {"nlndl", "nlndl.defaults", "nlndl.errors"}  # import nothing of nlndl; every layer may use them
# sketch -> parse -> check -> ground (compiler) -> run (runtime) -> extract -> verify -> export
STAGES = [
    "nlndl.compiler.parser",
    "nlndl.compiler.check",
    "nlndl.compiler.ground",
    "nlndl.compiler.lowering",
    "nlndl.datalog",
    "nlndl.extract",
    "nlndl.verify",
    "nlndl.holdout",
    "nlndl.allowance",
    "nlndl.drops",
    "nlndl.learn",
    "nlndl.kg_rules",
    "nlndl.export",
    "nlndl.kg_export",
    "nlndl.jobs",
    "nlndl.jobs.ilp",
    "nlndl.jobs.kg",
    "nlndl.jobs.ldpc",
    "nlndl.api",
]


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The nlndl modules ``name`` imports, anywhere in it (inside functions too), except for type checking."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    pending = [ast.parse(path.read_text())]
    while pending:
        node = pending.pop()
        if _type_checking(node):
            continue
        pending.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import module` imports the module; `from module import name` the module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def layer(name: str) -> int:
    if name in BASE:
        return 0
    for rank, prefix in enumerate(("nlndl.compiler", "nlndl.runtime"), start=1):
        if name == prefix or name.startswith(prefix + "."):
            return rank
    if name.startswith("nlndl.bench"):
        return 4
    if name.startswith("nlndl.cli") or name == "nlndl.__main__":
        return 5
    return 3  # the application: learn, extract, verify, export, api, jobs, decoders, ...


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    known = modules()
    g = nx.DiGraph()
    for name, path in known.items():
        g.add_node(name)
        g.add_edges_from((name, target) for target in imports(name, path, known))
    return g


def test_the_graph_is_read_from_real_imports(graph):
    assert ("nlndl.runtime.chain", "nlndl.compiler.ir") in graph.edges
    assert ("nlndl.learn", "nlndl.verify") in graph.edges
    assert ("nlndl.cli.ilp", "nlndl.jobs.ilp") in graph.edges
    assert len(graph) > 60


def test_no_import_points_up_a_layer(graph):
    upward = [f"{a} -> {b}" for a, b in graph.edges if layer(b) > layer(a)]
    assert not upward, "imports against the layering: " + ", ".join(sorted(upward))


def test_base_modules_import_nothing_of_nlndl(graph):
    assert not [f"{a} -> {b}" for a in BASE for b in graph.successors(a)]


def test_no_cycles(graph):
    cycles = list(nx.simple_cycles(graph))
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_no_stage_imports_a_later_one(graph):
    rank = {name: i for i, name in enumerate(STAGES)}
    later = [f"{a} -> {b}" for a, b in graph.edges if a in rank and b in rank and rank[b] > rank[a]]
    assert not later, "a stage of the data path imports a later one: " + ", ".join(later)


def test_the_cli_calls_the_library_not_the_layers_below(graph):
    """Commands parse options and call the application (jobs, api, bench); the compiler and the runtime are
    the library's business."""
    reach = [
        f"{a} -> {b}"
        for a, b in graph.edges
        if layer(a) == 5 and layer(b) in (1, 2) and b != "nlndl.compiler.diagnostics"
    ]
    assert not reach, "the CLI reaches past the library: " + ", ".join(reach)
