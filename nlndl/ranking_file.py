"""Ranking files in AnyBURL's format, read back and scored by the field's protocol.

A ranking file holds three lines per triple: the triple (``head<TAB>relation<TAB>tail``, or separated by
single spaces as AnyBURL writes it), then ``Heads: `` and ``Tails: ``, each followed by entity and score
pairs, tab-separated, best first. ``nlndl kg predict --queries`` writes one; AnyBURL, SAFRAN and PyClause
write them too, so that rankings made by other learners are scored here exactly as nlndl's own are.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nlndl.compiler.diagnostics import Diagnostics, Span
from nlndl.ranking import Metrics, metrics

LABELS = ("Heads: ", "Tails: ")
MAX_ERRORS = 20  # located errors reported before the file is given up


@dataclass
class Known:
    """Every triple of a graph's splits, by query: the tails known for (relation, head) and the heads known for
    (relation, tail), to filter the other true answers out of a ranking."""

    entities: int
    tails: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    heads: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    relations: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, splits: dict[str, list[tuple[str, str, str]]]) -> Known:
        """Every split's triples indexed both ways; the candidates are every entity some triple names."""
        known = cls(0)
        for rows in splits.values():
            for h, r, t in rows:
                known.tails.setdefault((r, h), set()).add(t)
                known.heads.setdefault((r, t), set()).add(h)
                known.names.update((h, t))
                known.relations.add(r)
        known.entities = len(known.names)
        return known


def rank_in_list(listed: list[str], answer: str, others: set[str], entities: int) -> float:
    """The answer's rank in a listed ranking, the other known answers (``others``, without the answer) left
    out: its place in the list, or, not listed, the mean rank of the candidates the list leaves out (they are
    tied below it)."""
    kept = [e for e in listed if e == answer or e not in others]
    if answer in kept:
        return float(kept.index(answer) + 1)
    rest = entities - len(others) - len(kept)  # the unlisted candidates, the answer among them
    return len(kept) + (rest + 1) / 2


@dataclass
class FileScore:
    """The ranks a ranking file gives its triples' answers, both directions, and MRR and Hits@k of them, in all,
    per direction and per relation; ``triples`` the triple groups read."""

    triples: list[tuple[str, str, str]]
    head_ranks: np.ndarray
    tail_ranks: np.ndarray

    def metrics(self) -> Metrics:
        return metrics(np.concatenate([self.head_ranks, self.tail_ranks]))

    def per_direction(self) -> dict[str, Metrics]:
        """The head queries' and the tail queries' figures apart."""
        return {"heads": metrics(self.head_ranks), "tails": metrics(self.tail_ranks)}

    def per_relation(self) -> dict[str, Metrics]:
        by: dict[str, list[int]] = {}
        for at, (_, r, _) in enumerate(self.triples):
            by.setdefault(r, []).append(at)
        return {
            r: metrics(np.concatenate([self.head_ranks[ats], self.tail_ranks[ats]])) for r, ats in sorted(by.items())
        }


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as handle:
        for line in handle:
            yield line.removesuffix("\n").removesuffix("\r")


def _triple(line: str) -> list[str]:
    return line.split("\t") if "\t" in line else line.split(" ")


def score_file(path: Path, known: Known, diags: Diagnostics) -> FileScore | None:
    """Rank every triple's head and tail by the file's lists, filtered by ``known`` (every split); None, with
    located errors in ``diags``, where the file is malformed or names what the graph does not hold. The file is
    read as a stream: what it costs is the graph, not the file."""
    name = str(path)
    triples: list[tuple[str, str, str]] = []
    head_ranks: list[float] = []
    tail_ranks: list[float] = []
    group: list[str] = []
    number = 0
    try:
        for number, line in enumerate(_lines(path), start=1):
            if len(diags.errors) >= MAX_ERRORS:
                break
            if not group and not line.strip():
                continue  # blank lines between groups
            group.append(line)
            if len(group) < 3:
                continue
            answered = _group(name, number - 2, group, known, diags)
            group = []
            if answered is not None:
                triple, head_rank, tail_rank = answered
                triples.append(triple)
                head_ranks.append(head_rank)
                tail_ranks.append(tail_rank)
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as exc:
        diags.error(Span(name, max(number, 1), 1), f"cannot read ranking file {path}: {exc}")
        return None
    if group and len(diags.errors) < MAX_ERRORS:
        diags.error(
            Span(name, number, 1), "a triple's group ends early: expected the triple, 'Heads: ...' and 'Tails: ...'"
        )
    if diags:
        return None
    if not triples:
        diags.error(Span(name, 1, 1), "no ranked triple in the file")
        return None
    return FileScore(triples, np.array(head_ranks), np.array(tail_ranks))


def _group(
    name: str, first: int, group: list[str], known: Known, diags: Diagnostics
) -> tuple[tuple[str, str, str], float, float] | None:
    """One triple's three lines, checked and ranked; None, with located errors, where they are malformed."""
    before = len(diags.errors)
    fields = _triple(group[0])
    if len(fields) != 3:
        diags.error(Span(name, first, 1), f"expected a triple (head, relation, tail), got {len(fields)} fields")
        return None
    h, r, t = fields
    if r not in known.relations:
        diags.error(Span(name, first, len(h) + 2), f"no relation {r!r} in the graph")
    for entity, column in ((h, 1), (t, len(h) + len(r) + 3)):
        if entity not in known.names:
            diags.error(Span(name, first, column), f"no entity {entity!r} in the graph")
    lists = []
    for offset, label in enumerate(LABELS, start=1):
        line = group[offset]
        if not line.startswith(label.rstrip()):
            diags.error(Span(name, first + offset, 1), f"expected a line starting {label.rstrip()!r}")
            continue
        body = line[len(label.rstrip()) :].lstrip(" ").removesuffix("\t")  # AnyBURL ends each list with a tab
        items = body.split("\t") if body else []
        if len(items) % 2:
            column = len(line) + 1
            diags.error(Span(name, first + offset, column), "expected entity and score pairs: a score is missing")
            continue
        listed = items[0::2]
        column = len(label) + 1
        for entity, score in zip(items[0::2], items[1::2], strict=True):
            if entity not in known.names:
                diags.error(Span(name, first + offset, column), f"no entity {entity!r} in the graph")
            try:
                float(score)
            except ValueError:
                where = Span(name, first + offset, column + len(entity) + 1)
                diags.error(where, f"expected a score after {entity!r}, got {score!r}")
            column += len(entity) + len(score) + 2
            if len(diags.errors) - before > 3:
                break
        lists.append(listed)
    if len(diags.errors) > before:
        return None
    heads, tails = lists
    head_others = known.heads.get((r, t), set()) - {h}
    tail_others = known.tails.get((r, h), set()) - {t}
    head_rank = rank_in_list(heads, h, head_others, known.entities)
    tail_rank = rank_in_list(tails, t, tail_others, known.entities)
    return (h, r, t), head_rank, tail_rank
