"""Knowledge graphs given as triples, written as a sketch that learns one relation.

The layout is Neural LP's (``head<TAB>relation<TAB>tail``): ``facts.txt`` the background graph, ``train.txt``
the training triples, ``valid.txt`` and ``test.txt`` held out, ``entities.txt`` the entities. Each relation
becomes a binary relation of the sketch (its name made an identifier where it is not one), read from a
``.facts`` file. As in Neural LP's protocol, facts.txt is the graph the rules read, the target's own
triples there too (as ``<target>_fact``, so that a rule may say "the brother of a sister"), and the
target's triples of train.txt are its positive examples. A knowledge graph is open world, a missing
triple unknown rather than false, so the negatives are not the closed world: each positive's head or
tail is replaced by an entity drawn with the seed, keeping only triples that no split but the one held out
holds. The split held out (test.txt, or valid.txt where it is the one ranked) may hold a negative as it may
hold any triple the learner does not know: leaving its triples out of the draw would tell the learner which
they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nlndl.compiler import ast
from nlndl.compiler.check import RESERVED
from nlndl.compiler.diagnostics import Diagnostics, Span
from nlndl.compiler.facts import read_facts
from nlndl.compiler.join import member, ranges, sorted_unique
from nlndl.compiler.parser import parse_source
from nlndl.compiler.symbols import quoted
from nlndl.defaults import KG_BODY, KG_ENTRIES, KG_NEGATIVES, KG_VARS

Triple = tuple[str, str, str]
SPLITS = ("facts", "train", "valid", "test")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ATOMS_PER_RELATION = 9  # candidate atoms a binary relation gives a clause of three variables, at most
SCORED = 1000  # positives (and their negatives) that score the relations a clause body may read
SCORE_BLOCK = 256  # examples whose edges are gathered at once while scoring them
MAX_DRAWS = 100  # draws per wanted negative before a positive is left with fewer (a nearly complete relation)


def read_triples(path: Path, diags: Diagnostics, memory_limit: int | None = None) -> list[Triple]:
    """The triples of one file; malformed lines are located errors in ``diags``."""
    rows = read_facts(path, ["symbol"] * 3, diags, Span(str(path), 1, 1), memory_limit)
    return [(str(h), str(r), str(t)) for h, r, t in rows]


def split_path(directory: Path, name: str) -> Path:
    """The file of one split: ``<name>.txt``, else ``<name>.txt.gz`` where only that exists."""
    plain = directory / f"{name}.txt"
    packed = directory / f"{name}.txt.gz"
    return packed if not plain.exists() and packed.exists() else plain


def standard_layout(directory: Path) -> bool:
    """Whether the graph comes as train/valid/test with no facts.txt (WN18RR's and FB15k-237's layout): then
    train.txt is the graph, and each relation's training triples are split into its graph and its queries."""
    return not split_path(directory, "facts").exists()


def read_splits(directory: Path, diags: Diagnostics, memory_limit: int | None = None) -> dict[str, list[Triple]]:
    """Each split's triples: facts.txt (absent in the standard layout) and train.txt, and valid.txt and test.txt
    where present (empty where not), each possibly gzipped; malformed lines are located errors in ``diags``."""
    split: dict[str, list[Triple]] = {name: [] for name in SPLITS}
    for name in SPLITS:
        path = split_path(directory, name)
        if name == "train" or path.exists() or (name == "facts" and not standard_layout(directory)):
            split[name] = read_triples(path, diags, memory_limit)
    return split


QUERY_SHARE = 0.5  # standard layout: of a target's training triples, the share that are queries (positives)


def query_split(split: dict[str, list[Triple]], target: str, seed: int) -> tuple[list[Triple], list[Triple]]:
    """The graph the rules read and the training triples of ``target`` to learn from. Neural LP's layout gives
    them as facts.txt and train.txt. In the standard layout (no facts.txt) train.txt is the graph, and the
    target's own triples are split, drawn with the seed: :data:`QUERY_SHARE` of them are queries, left out of
    the graph so that no rule is trivially true of them, and the rest stay in the graph as the target's
    known facts."""
    if split["facts"]:
        return split["facts"], split["train"]
    own = sorted({t for t in split["train"] if t[1] == target})
    rng = np.random.default_rng([seed, 17, len(own)])
    order = rng.permutation(len(own))
    count = max(1, round(QUERY_SHARE * len(own))) if own else 0
    queries = {own[i] for i in order[:count]}
    return [t for t in split["train"] if t not in queries], sorted(queries)


def is_identifier(name: str) -> bool:
    """Whether a relation name can stand in a sketch as it is: an identifier that no engine reserves."""
    return bool(IDENTIFIER.fullmatch(name)) and name not in RESERVED


def identifiers(names: list[str]) -> dict[str, str]:
    """A distinct Datalog identifier for each relation name. A name that is one (:func:`is_identifier`) keeps
    it; each other name has every character outside ``[A-Za-z0-9_]`` made ``_`` (and ``r_`` in front where it
    would not start an identifier or is reserved), numbered where that is taken."""
    out = {name: name for name in names if is_identifier(name)}
    taken = set(out.values())
    for name in sorted(set(names) - set(out)):
        ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
        if not is_identifier(ident):
            ident = f"r_{ident}"
        base, k = ident, 2
        while ident in taken:
            ident, k = f"{base}_{k}", k + 1
        out[name] = ident
        taken.add(ident)
    return {name: out[name] for name in sorted(out)}


FACT = "\0fact"  # key of the target's own facts.txt triples among the background relations (no relation's name)


def fact_name(target: str, taken: set[str]) -> str:
    """The identifier of the target's known triples: ``<target>_fact``, numbered where a relation has it."""
    name, k = f"{target}_fact", 2
    while name in taken:
        name, k = f"{target}_fact_{k}", k + 1
    return name


def sketch_identifiers(names: list[str], target: str, own_facts: bool) -> dict[str, str]:
    """The identifiers of the sketch learning ``target``: each relation's (:func:`identifiers`) and, where the
    target has triples in facts.txt (``own_facts``), theirs under the key :data:`FACT`."""
    ident = identifiers(names)
    if own_facts:
        ident[FACT] = fact_name(ident[target], set(ident.values()))
    return ident


def comment(text: str) -> str:
    """``text`` fit to stand in a one-line comment: every unprintable character (a newline in a directory's
    name, say) written as its escape."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def corrupt(
    positives: list[tuple[str, str]],
    entities: list[str],
    known: set[tuple[str, str]],
    per: int,
    rng: np.random.Generator,
) -> list[tuple[str, str]]:
    """``per`` negatives for each positive (head, tail): the head or the tail (a coin each) replaced by a
    drawn entity, none of them ``known`` or drawn twice; in the order of the positives."""
    out: list[tuple[str, str]] = []
    seen = set(known)
    for head, tail in positives:
        made = draws = 0
        while made < per and draws < per * MAX_DRAWS:
            draws += 1
            other = entities[int(rng.integers(len(entities)))]
            pair = (head, other) if rng.random() < 0.5 else (other, tail)
            if pair not in seen:
                seen.add(pair)
                out.append(pair)
                made += 1
    return out


def drawn_order(positives: list[tuple[str, str]], seed: int) -> list[tuple[str, str]]:
    """The positives in an order drawn with the seed: a relation with more than it can learn from in one
    network learns from a prefix of it (the confidences still count every known triple)."""
    order = np.random.default_rng([seed, 23, len(positives)]).permutation(len(positives))
    return [positives[i] for i in order]


class Indexed:
    """A background's relations as index pairs over one numbering of the entities (one more row for an entity
    outside it), made once per sketch: the budget's counts and the body's choice read these arrays, not names.
    """

    def __init__(self, background: dict[str, list[tuple[str, str]]], also: Iterable[str] = ()) -> None:
        flat = [e for rows in background.values() for pair in rows for e in pair]
        names = sorted(set(flat).union(also))
        self.at = {e: i for i, e in enumerate(names)}
        self.n = len(names) + 1
        codes = np.array(list(map(self.at.__getitem__, flat)), dtype=np.int64).reshape(-1, 2)
        ends = np.cumsum([len(rows) for rows in background.values()])
        self.edges = dict(zip(background, np.split(codes, ends[:-1]) if background else [], strict=True))

    def __iter__(self) -> Iterator[str]:
        return iter(self.edges)

    def __len__(self) -> int:
        return len(self.edges)

    def index(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """(len(pairs), 2) int64: each pair's head and tail index (the extra row for an entity outside)."""
        codes = [self.at.get(e, self.n - 1) for pair in pairs for e in pair]
        return np.array(codes, dtype=np.int64).reshape(-1, 2)

    def only(self, relations: Iterable[str]) -> Indexed:
        """The same numbering, with these relations' edges alone."""
        out = object.__new__(Indexed)
        out.at, out.n, out.edges = self.at, self.n, {r: self.edges[r] for r in relations}
        return out

    def all_edges(self) -> np.ndarray:
        return np.concatenate([np.zeros((0, 2), dtype=np.int64), *self.edges.values()])

    def near(self) -> object:
        """The symmetric 0/1 adjacency over every relation (scipy CSR)."""
        from scipy import sparse  # imported here: only a knowledge graph's sketch needs it

        edges = self.all_edges()
        near = sparse.csr_matrix(
            (
                np.ones(2 * len(edges), dtype=np.float32),
                (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]]),
            ),
            shape=(self.n, self.n),
        )
        near.data[:] = 1
        return near


def third_values(
    background: dict[str, list[tuple[str, str]]] | Indexed, pairs: list[tuple[str, str]], path: bool
) -> np.ndarray:
    """Per head atom (a, b) of ``pairs``, the substitutions of a clause of three variables over ``background``
    that pruning keeps: the third variable at every entity that a true atom joins to a or b, or that has an edge
    to itself (a true ``p(C, C)``), under ``prune=path`` at those joined to both; and at its domain's first
    constant (counted once more, an upper bound)."""
    graph = background if isinstance(background, Indexed) else Indexed(background)
    near = graph.near()
    heads, tails = graph.index(pairs).T
    if path:
        joined = near[heads].multiply(near[tails])
        return joined.getnnz(axis=1).astype(np.int64) + 1
    edges = graph.all_edges()
    loops = np.zeros(graph.n, dtype=bool)
    loops[edges[edges[:, 0] == edges[:, 1], 0]] = True
    either = near[heads] + near[tails]
    counts = either.getnnz(axis=1).astype(np.int64)
    rows, cols = either.nonzero()
    counts += int(loops.sum()) - np.bincount(rows[loops[cols]], minlength=len(pairs))  # loops not counted yet
    return counts + 1


def within_budget(
    positives: list[tuple[str, str]], background: dict[str, list[tuple[str, str]]] | Indexed, negatives: int, most: int
) -> list[tuple[str, str]]:
    """The longest prefix of ``positives`` (at least one) whose substitutions under ``prune=path``
    (:func:`third_values`), with ``negatives`` corrupted triples each of about as many, stay within ``most``."""
    total = np.cumsum((1 + negatives) * third_values(background, positives, True))
    return positives[: max(1, int(np.searchsorted(total, most, "right")))]


def path_scores(
    background: dict[str, list[tuple[str, str]]] | Indexed,
    positives: list[tuple[str, str]],
    negatives: list[tuple[str, str]],
) -> dict[str, float]:
    """Per background relation, the share of positives minus the share of negatives whose head and tail it
    joins by a path of at most two edges (it on one of them, read either way, through any relation of the graph
    on the other): how far a clause over it can tell the target's triples from corrupted ones. Every relation
    at once: each example's edges at its head and at its tail, a block of examples at a time."""
    graph = background if isinstance(background, Indexed) else Indexed(background)
    n, relations = graph.n, list(graph.edges)
    edges = graph.all_edges()
    relation = np.repeat(np.arange(len(relations)), [len(e) for e in graph.edges.values()])
    ends = np.r_[edges[:, 0], edges[:, 1]]  # every edge read both ways, by the end it is read from
    order = np.argsort(ends, kind="stable")
    ends, others, relation = ends[order], np.r_[edges[:, 1], edges[:, 0]][order], np.r_[relation, relation][order]
    near = sorted_unique(ends * n + others)  # the keys of the symmetric adjacency over every relation

    def shares(examples: list[tuple[str, str]]) -> dict[str, float]:
        if not examples:
            return dict.fromkeys(relations, 0.0)
        coded = graph.index(examples)
        joins = np.zeros((len(examples), len(relations)), dtype=bool)
        for first in range(0, len(examples), SCORE_BLOCK):
            heads, tails = coded[first : first + SCORE_BLOCK].T
            for at, far, from_head in ((heads, tails, True), (tails, heads, False)):
                lo = np.searchsorted(ends, at, "left")
                count = np.searchsorted(ends, at, "right") - lo
                example = np.repeat(np.arange(at.size), count)
                taken = ranges(lo, count)
                y = others[taken]
                # from the head, y then the tail (or y is the tail); from the tail, the head then y
                key = y * n + far[example] if from_head else far[example] * n + y
                hit = member(key, near)
                if from_head:
                    hit |= y == far[example]
                joins[first + example[hit], relation[taken][hit]] = True
        return {r: float(joins[:, j].mean()) for j, r in enumerate(relations)}

    pos, neg = shares(positives), shares(negatives)
    return {r: pos[r] - neg[r] for r in relations}


def body_relations(
    background: dict[str, list[tuple[str, str]]] | Indexed,
    positives: list[tuple[str, str]],
    negatives: list[tuple[str, str]],
    most: int | None,
) -> list[str]:
    """The background relations a clause body may read: every one where the graph has at most ``most``, else the
    ``most`` with the best :func:`path_scores` above zero (in the background's order; the best ``most`` where
    none is above zero). A large graph of hundreds
    of relations (FB15k-237's 237) would otherwise give each relation's network thousands of candidate atoms."""
    if most is None or len(background) <= most:
        return list(background)
    scores = path_scores(background, positives, negatives)
    ranked = sorted(background, key=lambda r: (-scores[r], r))
    chosen = set([r for r in ranked if scores[r] > 0][:most] or ranked[:most])  # none above zero: the best anyway
    return [r for r in background if r in chosen]


@dataclass
class KGSketch:
    """A sketch learning ``target`` from a knowledge graph, and the facts files it reads."""

    text: str
    facts: dict[str, str]  # relation identifier -> its .facts file's text
    positives: int
    negatives: int
    relations: dict[str, str] = field(default_factory=dict)  # relation name -> identifier
    target: str = ""  # the learned relation's identifier
    examples: list[tuple[str, str, bool]] = field(default_factory=list)  # (head, tail, positive), as in the text

    def parsed(self, name: str) -> ast.Sketch:
        """The sketch as parsing ``text`` (located as ``name``) gives it, its example lines made into nodes
        directly: lark would spend most of a large relation's compile time on them (WN18RR's _hypernym:
        52,194 examples, 85% of its compile)."""
        lines = self.text.splitlines()
        first = len(lines) - len(self.examples)  # the examples are the text's last lines
        sketch = parse_source("\n".join(lines[:first]) + "\n", name)
        examples = sketch.worlds[0].examples
        for line, (head, tail, positive) in enumerate(self.examples, start=first + 1):
            at = Span(name, line, len(".pos ") + 1)
            args = (ast.Const(head, at), ast.Const(tail, at))
            examples.append(ast.Example(ast.Atom(self.target, args, at), positive, Span(name, line, 1)))
        return sketch


def kg_sketch(
    directory: Path,
    target: str,
    diags: Diagnostics,
    negatives: int = KG_NEGATIVES,
    seed: int = 0,
    vars: int = KG_VARS,  # noqa: A002
    memory_limit: int | None = None,
    splits: dict[str, list[Triple]] | None = None,
    max_body: int | None = KG_BODY,
    max_entries: int | None = KG_ENTRIES,
    held_out: str = "test",
) -> KGSketch | None:
    """The sketch (None, with located errors in ``diags``, when the files cannot be read or the target is
    not a relation of the graph); ``splits``: the triples :func:`read_splits` read, if already read. A relation
    whose network would pass ``max_entries`` index entries (substitutions x candidate atoms, counted by
    :func:`third_values`) reads at most ``max_body`` relations (:func:`body_relations`) and, if still past
    it, is learned under ``prune=path`` from as many positives as :func:`within_budget` keeps; None: no limit.
    ``held_out``: the split to be ranked ("test" or "valid"), whose triples a negative may be; the triples of
    every other split but test.txt are known and never drawn."""
    split = splits if splits is not None else read_splits(directory, diags, memory_limit)
    if diags:
        return None
    names = sorted({r for rows in split.values() for _, r, _ in rows})
    train_file = Span(str(split_path(directory, "train")), 1, 1)
    if target not in names:
        near = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
        diags.error(train_file, f"no relation {target!r} in the graph (it has {near})")
        return None
    if len(names) < 2:
        diags.error(train_file, f"no relation besides {target!r} to learn it from")
        return None
    entity_file = directory / "entities.txt"
    if entity_file.exists():
        where = Span(str(entity_file), 1, 1)
        entities = [row[0] for row in read_facts(entity_file, ["symbol"], diags, where, memory_limit)]
        if not entities and not diags:
            diags.error(where, "no entities (an empty entities.txt); remove it to draw from the triples' entities")
    else:
        entities = sorted({e for rows in split.values() for h, _, t in rows for e in (h, t)})
    if diags:
        return None
    most = 2 * (len(entities) - 1)  # a positive's head or tail replaced by any other entity
    if negatives > most:
        diags.error(
            train_file,
            f"--negatives {negatives}: a triple has at most {most:,} corruptions in a graph of {len(entities):,} "
            "entities; ask for fewer",
        )
        return None
    graph, queries = query_split(split, target, seed)
    background: dict[str, list[tuple[str, str]]] = {r: [] for r in names}
    for h, r, t in graph:
        background[r].append((h, t))
    ident = sketch_identifiers(names, target, bool(background[target]))
    if background[target]:  # the target's known triples, under a name of their own
        background[FACT] = background.pop(target)
    else:
        del background[target]
    positives = sorted({(h, t) for h, r, t in queries if r == target})
    if not positives:
        diags.error(train_file, f"no triple of {target!r} in train.txt to learn from")
        return None
    everyone = len(positives)
    known = {
        (h, t) for name in ("facts", "train", "valid") if name != held_out for h, r, t in split[name] if r == target
    }
    order = drawn_order(positives, seed)
    everything = len(background)

    def too_large(relations: Indexed) -> bool:
        """Whether the network of every positive over ``relations`` would pass ``max_entries``."""
        whole = (1 + negatives) * int(third_values(relations, positives, False).sum())
        return whole * ATOMS_PER_RELATION * len(relations) > (max_entries or 0)

    prune = "extensional"
    if max_entries is not None and vars == 3:
        indexed = Indexed(background, entities)
        if too_large(indexed):
            if max_body is not None and len(background) > max_body:
                scored = order[:SCORED]
                drawn = corrupt(scored, entities, known, negatives, np.random.default_rng([seed, 11]))
                chosen = body_relations(indexed, scored, drawn, max_body)
                background = {r: background[r] for r in chosen}
                indexed = indexed.only(chosen)
            if too_large(indexed):
                prune = "path"
                most = max_entries // (ATOMS_PER_RELATION * len(background))
                order = within_budget(order, indexed, negatives, most)
    chosen = list(background)
    positives = sorted(order)
    drawn = corrupt(positives, entities, known, negatives, np.random.default_rng([seed, 11]))
    body_text = ", ".join(ident[r] for r in chosen)
    lines = [
        f"// {comment(target)} from the knowledge graph {comment(directory.name)} (nlndl kg sketch --relation "
        f"{comment(target)} "
        f"--negatives {negatives} --seed {seed})",
        "// background: facts.txt; positives: the target's triples of train.txt; negatives: "
        "their heads or tails corrupted (open world: no closed world)"
        if split["facts"]
        else f"// background: train.txt but for {QUERY_SHARE:.0%} of the target's triples, drawn with the seed, "
        "which are the positives; negatives: their heads or tails corrupted (open world: no closed world)",
    ]
    if prune == "path":
        lines.append(
            f"// prune=path: a third variable only where it joins head and tail; positives: {len(positives):,} of "
            f"the {everyone:,}, drawn with the seed"
        )
    if len(chosen) < everything:
        lines.append(
            f"// body: the {len(chosen)} of {everything} relations that best tell the positives from the "
            "negatives by paths of at most two edges"
        )
    shown = [name for name in names if name in background or name == target]
    renamed = [f"{comment(name)} -> {ident[name]}" for name in shown if ident[name] != name]
    if renamed:
        lines.append(f"// relations renamed: {', '.join(renamed)}")
    for r in background:
        original = f"{comment(target)} of the graph" if r == FACT else comment(r)
        renamed = f"  // {original}" if ident[r] != original else ""
        lines += [f".decl {ident[r]}(head: symbol, tail: symbol){renamed}", f".input {ident[r]}"]
    lines += [f".decl {ident[target]}(head: symbol, tail: symbol)"]
    pruning = ", prune=path" if prune == "path" else ""
    lines += [f".learn {ident[target]}(vars={vars}, body=[{body_text}]{pruning})"]
    lines += [f".pos {ident[target]}({quoted(h)}, {quoted(t)})." for h, t in positives]
    lines += [f".neg {ident[target]}({quoted(h)}, {quoted(t)})." for h, t in drawn]
    facts = {ident[r]: "".join(f"{h}\t{t}\n" for h, t in sorted(rows)) for r, rows in background.items()}
    examples = [(h, t, True) for h, t in positives] + [(h, t, False) for h, t in drawn]
    return KGSketch("\n".join(lines) + "\n", facts, len(positives), len(drawn), ident, ident[target], examples)
