"""Checking learned rules against the examples: the crisp evaluator and, independently, clingo.

The facts of a world are its true extensional atoms as compiled (the background closure of every
relation the learned rules can read), so the check needs only the compiled program.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from nlndl.compiler.crisp import BodyAtom, Database, Rule, derived_at, evaluate, reads_no_head
from nlndl.compiler.ir import CompiledProgram, WholeWorld, WorldIR, projection_of
from nlndl.compiler.path_join import PathJoin
from nlndl.compiler.symbols import SymbolTable
from nlndl.datalog import Names, clingo_program
from nlndl.engines import clingo_model

GroundAtom = tuple[str, tuple[int, ...]]
MAX_LISTED = 1000  # missed and wrong atoms a score lists by name; its counts are exact


@dataclass
class Score:
    """Example accuracy of a program over all worlds."""

    positives: int = 0
    negatives: int = 0
    true_positives: int = 0
    false_positives: int = 0
    missed: list[str] = field(default_factory=list)  # positive examples not derived (the first MAX_LISTED)
    wrong: list[str] = field(default_factory=list)  # negative examples derived (the first MAX_LISTED)
    counterexamples: list[list[GroundAtom]] = field(default_factory=list, repr=False)  # per world, missed and wrong
    unchecked: str | None = None  # why the program was not scored (a check stopped at its ceiling); counts all 0

    @property
    def solved(self) -> bool:
        return self.unchecked is None and self.true_positives == self.positives and self.false_positives == 0

    @property
    def precision(self) -> float:
        derived = self.true_positives + self.false_positives
        return self.true_positives / derived if derived else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.positives if self.positives else 1.0

    @property
    def f1(self) -> float:
        both = self.precision + self.recall
        return 2 * self.precision * self.recall / both if both else 0.0

    def quality(self) -> str:
        """``precision P, recall R``, or where the program derives no example at all, that (a precision of
        nothing derived is not a figure to print); where it was not scored, why."""
        if self.unchecked is not None:
            return self.unchecked
        if self.true_positives + self.false_positives == 0:
            return f"no example derived, recall {self.recall:.3f}"
        return f"precision {self.precision:.3f}, recall {self.recall:.3f}"

    @property
    def false_negatives(self) -> int:
        """Positive examples not derived."""
        return self.positives - self.true_positives

    @property
    def mistakes(self) -> int:
        """Examples misclassified: positives not derived and negatives derived."""
        return self.false_negatives + self.false_positives

    @property
    def accuracy(self) -> float:
        total = self.positives + self.negatives
        correct = self.true_positives + self.negatives - self.false_positives
        return correct / total if total else 1.0

    def add(
        self,
        model: set[GroundAtom],
        pos: set[GroundAtom],
        neg: set[GroundAtom],
        symbols: SymbolTable,
        closed: dict[str, int] | None = None,
        unknown: set[GroundAtom] | None = None,
    ) -> None:
        """Count one world. ``closed``: per closed-world predicate its number of ground atoms, every one that
        is not a positive example a negative one; those derived are the false positives, read off the model
        without enumerating the complement (so sampled training negatives do not narrow the check).
        ``unknown``: atoms of closed predicates that are neither (validation examples held out)."""
        closed, unknown = closed or {}, unknown or set()
        neg = {a for a in neg if a[0] not in closed}
        wrong = (neg & model) | {a for a in model if a[0] in closed and a not in pos and a not in unknown}
        self.positives += len(pos)
        held = sum(a[0] in closed for a in unknown)
        self.negatives += len(neg) + sum(size - sum(a[0] == p for a in pos) for p, size in closed.items()) - held
        self.true_positives += len(pos & model)
        self.false_positives += len(wrong)
        show = lambda a: f"{a[0]}({','.join(symbols.render(c) for c in a[1])})"  # noqa: E731
        room = MAX_LISTED - len(self.missed)
        missed = sorted(pos - model)[: max(room, 0)]
        self.missed += [show(a) for a in missed]
        room = MAX_LISTED - len(self.wrong)
        wrong = sorted(wrong)[: max(room, 0)]
        self.wrong += [show(a) for a in wrong]
        self.counterexamples.append(missed + wrong)

    def to_json(self) -> dict:
        return {
            **{k: v for k, v in asdict(self).items() if k != "counterexamples"},
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "mistakes": self.mistakes,
            "accuracy": self.accuracy,
            "solved": self.solved,
        }


def world_facts(program: CompiledProgram, world: WorldIR) -> Database:
    """The world's true extensional atoms, by relation (learned relations start empty; a projection such as
    ``edge[0]`` left out: the rules say ``edge(X, _)``)."""
    facts: Database = {name: set() for name in world.layout if projection_of(name) is None}
    for slot in np.flatnonzero(world.valuation[: world.atoms - 1] > 0):
        name, args = world.decode_slot(int(slot))
        if name in facts:
            facts[name].add(args)
    return facts


def world_examples(world: WorldIR) -> tuple[set[GroundAtom], set[GroundAtom]]:
    pos, neg = set(), set()
    for slot, label in zip(world.example_slots.tolist(), world.example_labels.tolist(), strict=True):
        (pos if label > 0.5 else neg).add(world.decode_slot(int(slot)))
    return pos, neg


def closed_sizes(program: CompiledProgram, world: WorldIR) -> dict[str, int]:
    """Per closed-world learned predicate, its number of ground atoms in the world."""
    return {p: world.layout[p].grid for p in program.closed}


def whole_facts(world: WholeWorld) -> Database:
    """A whole world's facts, by relation (projections left out, as in :func:`world_facts`)."""
    return {
        k[len("facts/") :]: set(map(tuple, v.tolist()))
        for k, v in world.arrays.items()
        if k.startswith("facts/") and projection_of(k[len("facts/") :]) is None
    }


def whole_examples(world: WholeWorld) -> tuple[set[GroundAtom], set[GroundAtom]]:
    pos, neg = set(), set()
    for key, atoms in world.arrays.items():
        if key.startswith("examples/"):
            name = key[len("examples/") :]
            for args, label in zip(atoms.tolist(), world.arrays[f"labels/{name}"].tolist(), strict=True):
                (pos if label > 0.5 else neg).add((name, tuple(args)))
    return pos, neg


def held_out(world: WorldIR) -> tuple[set[GroundAtom], set[GroundAtom]]:
    """The validation examples held out of a world's training (nlndl.holdout), positive and negative."""
    slots, labels = world.arrays.get("holdout/slots"), world.arrays.get("holdout/labels")
    pos, neg = set(), set()
    if slots is not None:
        for slot, label in zip(slots.tolist(), labels.tolist(), strict=True):
            (pos if label > 0.5 else neg).add(world.decode_slot(int(slot)))
    return pos, neg


class CheckedWorld(NamedTuple):
    """One world as a check reads it: its facts, its labelled examples, its closed predicates' sizes and the
    atoms that are neither (held out)."""

    facts: Database
    positives: set[GroundAtom]
    negatives: set[GroundAtom]
    closed: dict[str, int]
    unknown: set[GroundAtom]


def checked_worlds(program: CompiledProgram, whole: bool = False) -> list[CheckedWorld]:
    """What a check runs on, per world: the compiled worlds (those trained on), or with ``whole`` the whole
    worlds of a program trained on subgraphs (the compiled ones where it was not); decoded once per program
    (training, verifying and exporting read the same sets, and none changes them)."""
    return program.once(("checked worlds", whole and bool(program.whole)), lambda: _checked_worlds(program, whole))


def _checked_worlds(program: CompiledProgram, whole: bool) -> list[CheckedWorld]:
    if whole and program.whole:
        return [CheckedWorld(whole_facts(w), *whole_examples(w), w.closed, set()) for w in program.whole]
    return [
        CheckedWorld(world_facts(program, w), *world_examples(w), closed_sizes(program, w), unknown_atoms(w))
        for w in program.worlds
    ]


def unknown_atoms(world: WorldIR) -> set[GroundAtom]:
    """A world's atoms that are neither positive nor negative examples: the validation examples held out and a
    subgraph's atoms that it cannot label (WorldIR.unlabelled_slots)."""
    unlabelled = {world.decode_slot(int(slot)) for slot in world.unlabelled_slots.tolist()}
    return set().union(*held_out(world), unlabelled)


def shard_examples(worlds: list[CheckedWorld]) -> list[tuple[set[GroundAtom], ...]]:
    """Per world, the positive, negative and held-out examples: what a shard adds to the others'."""
    return [(pos, neg, unknown) for _, pos, neg, _, unknown in worlds]


def merged_worlds(own: list[CheckedWorld], shards: list[list[tuple[set[GroundAtom], ...]]]) -> list[CheckedWorld]:
    """Worlds whose examples were sharded among processes, whole again: per world this shard's facts (every
    shard holds all of them) and every shard's examples (:func:`shard_examples`)."""
    out = []
    for i, (facts, _, _, closed, _) in enumerate(own):
        pos, neg, unknown = (set().union(*(shard[i][k] for shard in shards)) for k in range(3))
        out.append(CheckedWorld(facts, pos, neg, closed, unknown))
    return out


def crisp_score(
    program: CompiledProgram, rules: list[Rule], whole: bool = False, worlds: list[CheckedWorld] | None = None
) -> Score:
    """Score of ``rules`` with nlndl's own crisp evaluator (full semantics: no pruning), on the worlds trained
    on or, with ``whole``, on the whole worlds (see :func:`checked_worlds`); or on ``worlds``, read once
    by the caller (a training run scores many rule sets on the same worlds)."""
    score = Score()
    learned = set(program.learned)
    symbols = program.symbol_table
    for facts, pos, neg, closed, unknown in worlds if worlds is not None else checked_worlds(program, whole):
        if asked_only(rules, closed):
            derived = derived_at(facts, rules, pos | neg)
        else:
            model = evaluate(facts, rules)
            derived = {(name, args) for name in learned for args in model.get(name, ())}
        score.add(derived, pos, neg, symbols, closed, unknown)
    return score


class RuleDerivations:
    """:func:`crisp_score` on fixed worlds that keeps what each rule derives at their examples: where the rules
    read no rule head, a rule set derives the union of what its rules derive alone (:func:`derived_at`), and a
    training run scores many rule sets that share most of their rules (each step of :func:`simplify` changes
    one). A kept atom is a reference to the example's own; past ``MAX_KEPT`` of them the store starts anew."""

    MAX_KEPT = 2_000_000  # derived atoms kept, over every rule and world (a large graph's relation has 10,000s)

    def __init__(self, program: CompiledProgram, worlds: list[CheckedWorld]) -> None:
        self.program, self.worlds = program, worlds
        self.derived: dict[Rule, list[set[GroundAtom]]] = {}
        self.kept = 0  # atoms in ``derived``

    @cached_property
    def asked(self) -> list[tuple[dict[GroundAtom, GroundAtom], PathJoin, set[GroundAtom]]]:
        """Per world: its examples (each its own key), the facts' arrays for path joins, and the examples that
        are facts already (derived by no rule). Made at the first rule set kept, not for a program whose rule
        sets never are (a closed-world head: every atom an example)."""
        out = []
        for facts, pos, neg, _, _ in self.worlds:
            asked = {atom: atom for atom in pos | neg}
            out.append((asked, PathJoin(facts), derived_at(facts, [], asked)))
        return out

    def score(self, rules: list[Rule]) -> Score:
        """The same score as ``crisp_score(program, rules, worlds=worlds)``."""
        if not all(asked_only(rules, closed) for _, _, _, closed, _ in self.worlds):
            return crisp_score(self.program, rules, worlds=self.worlds)
        if self.kept > self.MAX_KEPT:
            self.derived.clear()
            self.kept = 0
        for rule in rules:
            if rule not in self.derived:
                self.derived[rule] = [
                    {asked.get(atom, atom) for atom in derived_at(w[0], [rule], asked, join)}
                    for w, (asked, join, _) in zip(self.worlds, self.asked, strict=True)
                ]
                self.kept += sum(len(found) for found in self.derived[rule])
        score = Score()
        symbols = self.program.symbol_table
        for i, ((_, pos, neg, closed, unknown), (_, _, facts)) in enumerate(zip(self.worlds, self.asked, strict=True)):
            derived = facts.union(*(self.derived[rule][i] for rule in rules))
            score.add(derived, pos, neg, symbols, closed, unknown)
        return score


def asked_only(rules: list[Rule], closed: dict[str, int]) -> bool:
    """Whether a score needs the rules' model only at the examples: no rule body reads a rule head and no rule
    head is closed-world (whose every atom is an example, read off the whole model)."""
    return reads_no_head(rules) and not any(r.head in closed for r in rules)


def clingo_score(
    program: CompiledProgram, rules: list[Rule], whole: bool = False, worlds: list[CheckedWorld] | None = None
) -> Score:
    """Score of ``rules`` as clingo computes it, on each world's facts (names mangled for clingo); ``whole`` and
    ``worlds`` as for :func:`crisp_score`."""
    score = Score()
    symbols = program.symbol_table
    for facts, pos, neg, closed, unknown in worlds if worlds is not None else checked_worlds(program, whole):
        asked = pos | neg if asked_only(rules, closed) else None
        score.add(clingo_derived(program, facts, rules, asked), pos, neg, symbols, closed, unknown)
    return score


def clingo_derived(
    program: CompiledProgram, facts: Database, rules: list[Rule], asked: set[GroundAtom] | None = None
) -> set[GroundAtom]:
    """The learned predicates' atoms clingo derives from ``facts`` with ``rules``; with ``asked`` (rules whose
    bodies read no rule head, :func:`asked_only`), only those of ``asked``: each rule's body opens with an atom
    of the asked ones, so clingo grounds the rules there alone. Only the facts of relations the rules read or
    derive are written out (a knowledge graph's sketch holds up to 32 relations; a rule reads two or three)."""
    symbols = program.symbol_table
    names = Names.for_program(program)
    learned = set(program.learned)
    if asked is not None:
        facts, rules = asking(facts, rules, asked, set(program.relations))
    read = {r.head for r in rules} | {a.predicate for r in rules for a in r.body}
    facts = {p: rows for p, rows in facts.items() if p in read}  # no other fact bears on the rules' model
    derived = set()
    shown = {names(p): len(program.relations[p]["types"]) for p in learned}
    originals = names.originals()
    for pred, args in clingo_model(clingo_program(facts, rules, symbols, names), shown):
        original = originals.get(pred, pred)
        if original in learned:
            derived.add((original, tuple(symbols.ids[(isinstance(a, int), a)] for a in args)))
    return derived


def validation_score(program: CompiledProgram, rules: list[Rule]) -> Score | None:
    """``rules`` scored by clingo on the validation examples held out of training (each world's, the closed
    ones' included, as labelled); None when none were."""
    symbols = program.symbol_table
    score, any_held = Score(), False
    for world in program.worlds:
        pos, neg = held_out(world)
        if pos or neg:
            any_held = True
            score.add(clingo_derived(program, world_facts(program, world), rules), pos, neg, symbols)
    return score if any_held else None


def asking(facts: Database, rules: list[Rule], asked: set[GroundAtom], taken: set[str]) -> tuple[Database, list[Rule]]:
    """``facts`` with each rule head's asked atoms as a relation of their own (``asked__<head>``), and ``rules``
    with that relation's atom first in their bodies: at the asked atoms the same model, grounded nowhere else."""
    name: dict[str, str] = {}
    for head in sorted({r.head for r in rules}):
        candidate = f"asked__{head}"
        while candidate in taken:
            candidate += "_"
        name[head] = candidate
        taken = taken | {candidate}
    out = dict(facts)
    for head, relation in name.items():
        out[relation] = {args for predicate, args in asked if predicate == head}
    restricted = [Rule(r.head, r.head_args, (BodyAtom(name[r.head], r.head_args), *r.body)) for r in rules]
    return out, restricted
