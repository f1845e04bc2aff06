"""A knowledge graph's learned rules as one Datalog program for Soufflé and clingo, with the graph's triples as
its facts.

Each relation's program was learned reading the graph's relations as they are known; written together they
form one program whose rules also read each other's conclusions, so Soufflé and clingo compute their
closure (a superset of the per-relation predictions that ``bench kg`` ranks). Names are made valid for both
engines (:class:`nlndl.datalog.Names`): a relation such as ``Term0`` becomes ``r_Term0``.
"""

from __future__ import annotations

from nlndl import __version__, paths
from nlndl.compiler.crisp import Rule
from nlndl.compiler.symbols import quoted
from nlndl.compiler.triples import comment
from nlndl.constants import ConstantRules, listing, text
from nlndl.datalog import Names, render
from nlndl.kg_rules import KNOWN, Graph, RelationRules, clause_text
from nlndl.paths import LENGTH


def sources(learned: list[RelationRules]) -> dict[str, str]:
    """Every relation identifier the programs read or define -> the graph relation whose triples it holds."""
    out: dict[str, str] = {}
    for one in learned:
        out.update(one.sources)
    return dict(sorted(out.items()))


def rules(learned: list[RelationRules]) -> list[Rule]:
    return [rule for one in learned for rule, _ in one.program]


def renamed(learned: list[RelationRules]) -> dict[str, str]:
    """Each graph relation whose name the written program spells otherwise -> that name (the target's own
    facts.txt triples, ``<target>_fact``, are a view of their relation, not a renaming)."""
    names = Names.for_relations(list(sources(learned)))
    out = {}
    for one in learned:
        for ident, relation in one.sources.items():
            view = relation == one.relation and ident != one.head
            if not view and names(ident) != relation:
                out[relation] = names(ident)
    return dict(sorted(out.items()))


def renamed_header(learned: list[RelationRules], comment_mark: str) -> list[str]:
    changed = [f"{comment(a)} -> {b}" for a, b in renamed(learned).items()]
    return [f"{comment_mark} relations renamed: {', '.join(changed)}"] if changed else []


def souffle_text(learned: list[RelationRules], origin: str) -> str:
    held = sources(learned)
    names = Names.for_relations(list(held))
    lines = [f"// Learned by nlndl {__version__} from the knowledge graph {comment(origin)} (nlndl kg train)"]
    lines.append("// facts: <relation>.facts (facts.txt and train.txt); the rules' closure is the output")
    lines += renamed_header(learned, "//")
    for ident, relation in held.items():
        note = f"  // {comment(relation)}" if ident != relation else ""
        lines.append(f".decl {names(ident)}(head: symbol, tail: symbol){note}")
    lines += [f".input {names(ident)}" for ident in held]
    lines += [f".output {names(one.head)}" for one in learned]
    for one in learned:
        lines += ["", f"// {comment(one.relation)}"] + [render(r, "!", names, anonymous=True) for r, _ in one.program]
    return "\n".join(lines) + "\n"


def clingo_text(learned: list[RelationRules], origin: str) -> str:
    names = Names.for_relations(list(sources(learned)))
    lines = [f"% Learned by nlndl {__version__} from the knowledge graph {comment(origin)} (nlndl kg train)"]
    lines.append("% facts: facts.lp (facts.txt and train.txt): clingo rules.lp facts.lp")
    lines += renamed_header(learned, "%")
    for one in learned:
        lines += [f"% {comment(one.relation)}"] + [render(r, "not ", names, anonymous=True) for r, _ in one.program]
    lines += [f"#show {names(one.head)}/2." for one in learned]
    return "\n".join(lines) + "\n"


def anyburl_rule(rule: Rule, one: RelationRules) -> str:
    """A clause in AnyBURL's rule syntax, ``head(X,Y) <= body(X,A), ...``, with the graph's relation names."""
    return clause_text(rule, one.relation, one.sources, " <= ")


def anyburl_text(
    learned: list[RelationRules], graph: Graph | None = None, limit: int = 0, seed: int = 0, length: int = LENGTH
) -> str:
    """Every clause that ranks, one a line in AnyBURL's format (``predicted<TAB>correct<TAB>confidence<TAB>rule``,
    which PyClause reads): predicted, the pairs its body derives on the known triples; correct, the known ones
    among them; by confidence, best first. With ``graph``, also each relation's ``limit`` best counted rules
    of each kind: path rules of up to ``length`` atoms that no clause restates (nlndl.paths, found with
    ``seed``; the reflexive ones, r(X, X) :- ..., which AnyBURL's syntax does not write, left out) and rules with
    a constant (nlndl.constants), constants written as the graph names them."""
    rows = []
    for one in learned:
        for rule, conf in one.clauses:
            counts = one.counts(rule, conf)
            rows.append((-conf, f"{counts['predicted']}\t{counts['correct']}\t{conf:.6f}\t{anyburl_rule(rule, one)}"))
        if graph is not None and limit:
            restated, known = one.chains(), graph.known_matrices()
            counted = [  # each body let go as soon as it is counted
                (-r.confidence, f"{r.predicted}\t{r.correct}\t{r.confidence:.6f}\t{r.text(one.relation, ' <= ')}")
                for r in (one.counted if one.counted is not None else paths.each(known, one.relation, length, seed))
                if not r.restated(restated) and not r.reflexive
            ]
            rows += sorted(counted, key=lambda row: row[0])[:limit]
            bodies = graph.bodies()
            mined = ConstantRules.mine(bodies, one.relation, graph.relation_matrix(one.relation))
            for rule, predicted, correct, conf in listing(mined, limit):
                written = text(bodies, one.relation, rule, graph.entities, arrow=" <= ")
                rows.append((-conf, f"{predicted}\t{correct}\t{conf:.6f}\t{written}"))
    return "".join(line + "\n" for _, line in sorted(rows, key=lambda r: r[0]))


def fact_files(graph: Graph, learned: list[RelationRules]) -> dict[str, str]:
    """Soufflé's input: per relation identifier, ``<name>.facts`` with the known triples (tab-separated)."""
    held = sources(learned)
    names = Names.for_relations(list(held))
    out = {}
    for ident, relation in held.items():
        pairs = sorted(graph.pairs(relation, KNOWN))
        out[f"{names(ident)}.facts"] = "".join(f"{graph.entities[h]}\t{graph.entities[t]}\n" for h, t in pairs)
    return out


def clingo_facts(graph: Graph, learned: list[RelationRules]) -> str:
    """clingo's input: every known triple as ``relation("head", "tail").``"""
    held = sources(learned)
    names = Names.for_relations(list(held))
    lines = []
    for ident, relation in held.items():
        for h, t in sorted(graph.pairs(relation, KNOWN)):
            lines.append(f"{names(ident)}({quoted(graph.entities[h])},{quoted(graph.entities[t])}).")
    return "\n".join(lines) + "\n"
