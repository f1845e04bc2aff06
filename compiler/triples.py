"""Knowledge graphs given as triples, written as a sketch that learns one relation.

The layout is Neural LP's (``head<TAB>relation<TAB>tail``): ``facts.txt`` the background graph, ``train.txt``
the training triples, ``valid.txt`` and ``test.txt`` held out, ``entities.txt`` the entities. Each relation
becomes a binary relation of the sketch (its name made an identifier where it is not one), read from a
``.facts`` file. As in Neural LP's protocol, facts.txt is the graph the rules read, the target's own
triples there too (as ``<target>_fact``, so that a rule may say "the brother of a sister"), and the
target's triples of train.txt are its positive examples. A knowledge graph is open world, a missing
triple unknown rather than false, so the negatives are not the closed world: each positive's head or
tail is replaced by an entity drawn with the seed, keeping only triples that no split except test.txt
holds (a negative that is true in the test split would leak it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nlndl.compiler.diagnostics import Diagnostics, Span
from nlndl.compiler.facts import read_facts

Triple = tuple[str, str, str]
SPLITS = ("facts", "train", "valid", "test")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_DRAWS = 100  # draws per wanted negative before a positive is left with fewer (a nearly complete relation)


def read_triples(path: Path, diags: Diagnostics, memory_limit: int | None = None) -> list[Triple]:
    """The triples of one file; malformed lines are located errors in ``diags``."""
    rows = read_facts(path, ["symbol"] * 3, diags, Span(str(path), 1, 1), memory_limit)
    return [(str(h), str(r), str(t)) for h, r, t in rows]


def read_splits(directory: Path, diags: Diagnostics, memory_limit: int | None = None) -> dict[str, list[Triple]]:
    """Each split's triples: facts.txt and train.txt, and valid.txt and test.txt where present (empty where not);
    malformed lines are located errors in ``diags``."""
    split: dict[str, list[Triple]] = {name: [] for name in SPLITS}
    for name in SPLITS:
        path = directory / f"{name}.txt"
        if name in ("facts", "train") or path.exists():
            split[name] = read_triples(path, diags, memory_limit)
    return split


def identifiers(names: list[str]) -> dict[str, str]:
    """A distinct Datalog identifier for each relation name: itself where it is one, else with every other
    character made ``_`` (and ``r_`` in front where it would not start as an identifier)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in sorted(names):
        ident = name if IDENTIFIER.fullmatch(name) else re.sub(r"[^A-Za-z0-9_]", "_", name)
        if not IDENTIFIER.fullmatch(ident):
            ident = f"r_{ident}"
        base, k = ident, 2
        while ident in taken:
            ident, k = f"{base}_{k}", k + 1
        out[name] = ident
        taken.add(ident)
    return out


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


def quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


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


@dataclass
class KGSketch:
    """A sketch learning ``target`` from a knowledge graph, and the facts files it reads."""

    text: str
    facts: dict[str, str]  # relation identifier -> its .facts file's text
    positives: int
    negatives: int
    relations: dict[str, str] = field(default_factory=dict)  # relation name -> identifier


def kg_sketch(
    directory: Path,
    target: str,
    diags: Diagnostics,
    negatives: int = 2,
    seed: int = 0,
    vars: int = 3,  # noqa: A002
    memory_limit: int | None = None,
    splits: dict[str, list[Triple]] | None = None,
) -> KGSketch | None:
    """The sketch (None, with located errors in ``diags``, when the files cannot be read or the target is
    not a relation of the graph); ``splits``: the triples :func:`read_splits` read, if already read."""
    split = splits if splits is not None else read_splits(directory, diags, memory_limit)
    if diags:
        return None
    names = sorted({r for rows in split.values() for _, r, _ in rows})
    if target not in names:
        near = ", ".join(names[:12]) + (" ..." if len(names) > 12 else "")
        diags.error(Span(str(directory / "facts.txt"), 1, 1), f"no relation {target!r} in the graph (it has {near})")
        return None
    if len(names) < 2:
        diags.error(Span(str(directory / "facts.txt"), 1, 1), f"no relation besides {target!r} to learn it from")
        return None
    entity_file = directory / "entities.txt"
    if entity_file.exists():
        entities = [row[0] for row in read_facts(entity_file, ["symbol"], diags, Span(str(entity_file), 1, 1))]
    else:
        entities = sorted({e for rows in split.values() for h, _, t in rows for e in (h, t)})
    if diags:
        return None
    background: dict[str, list[tuple[str, str]]] = {r: [] for r in names}
    for h, r, t in split["facts"]:
        background[r].append((h, t))
    ident = sketch_identifiers(names, target, bool(background[target]))
    if background[target]:  # the target's known triples, under a name of their own
        background[FACT] = background.pop(target)
    else:
        del background[target]
    positives = sorted({(h, t) for h, r, t in split["train"] if r == target})
    if not positives:
        diags.error(Span(str(directory / "train.txt"), 1, 1), f"no triple of {target!r} in train.txt to learn from")
        return None
    known = {(h, t) for name in ("facts", "train", "valid") for h, r, t in split[name] if r == target}
    drawn = corrupt(positives, entities, known, negatives, np.random.default_rng([seed, 11]))
    body = ", ".join(ident[r] for r in background)
    lines = [
        f"// {target} from the knowledge graph {directory.name} (nlndl kg sketch --target {target} "
        f"--negatives {negatives} --seed {seed})",
        "// background: facts.txt; positives: the target's triples of train.txt; negatives: "
        "their heads or tails corrupted (open world: no closed world)",
    ]
    for r in background:
        original = f"{target} of facts.txt" if r == FACT else r
        renamed = f"  // {original}" if ident[r] != original else ""
        lines += [f".decl {ident[r]}(head: symbol, tail: symbol){renamed}", f".input {ident[r]}"]
    lines += [f".decl {ident[target]}(head: symbol, tail: symbol)"]
    lines += [f".learn {ident[target]}(vars={vars}, body=[{body}])"]
    lines += [f".pos {ident[target]}({quote(h)}, {quote(t)})." for h, t in positives]
    lines += [f".neg {ident[target]}({quote(h)}, {quote(t)})." for h, t in drawn]
    facts = {ident[r]: "".join(f"{h}\t{t}\n" for h, t in sorted(rows)) for r, rows in background.items()}
    return KGSketch("\n".join(lines) + "\n", facts, len(positives), len(drawn), ident)
