"""The compiled program: index arrays the runtime executes, plus the symbol tables to read them back.

Saved as a directory holding ``program.json`` (metadata, symbol tables) and ``arrays.safetensors``
(int64/float32 arrays); loading never executes code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

from nlndl.compiler.symbols import SymbolTable

T = TypeVar("T")

FORMAT = "nlndl-program/3"  # the only layout read back: a program saved by an older nlndl is compiled again


@dataclass
class InputAtom:
    """One candidate body atom of a learned predicate: q(t_1, ..., t_k) where term t_i is variable
    ``vars[i]``, or function ``funcs[i]`` applied to it (``None``: the plain variable)."""

    predicate: str
    vars: tuple[int, ...]
    funcs: tuple[str | None, ...] = ()

    def __post_init__(self) -> None:
        if not self.funcs:
            self.funcs = (None,) * len(self.vars)

    def binds(self, var: int) -> bool:
        """Whether the atom, where true, confines ``var`` for substitution pruning: it mentions ``var`` with
        another variable or alone once. ``same(V, V)`` does not: the inequality idiom's reflexive helper
        holds for every constant, and counting it would keep every substitution. Nor does a projection
        ``edge[0](V)``, which holds wherever ``edge(V, W)`` could bind V."""
        if projection_of(self.predicate) is not None:
            return False
        return var in self.vars and (len(self.vars) == 1 or set(self.vars) != {var})


# how a learned predicate's valuation after a step merges with the one before: replace it (the reference's
# default, "eq"), or keep what earlier steps derived: "or" (probabilistic sum, the reference's Fam=or for
# addition and multiplication) or "max"; the two that keep need a predicate that cannot lose atoms
AMALGAMATIONS = ("replace", "or", "max")


@dataclass
class LearnedIR:
    """What the runtime needs to know about one learned predicate."""

    predicate: str
    arity: int
    var_types: tuple[str, ...]
    form: str
    terms: int
    negation: bool
    invented: bool
    inputs: list[InputAtom]
    pruned: bool = True  # substitutions were pruned (prune=extensional): the safety gate keeps clauses sound under it
    negated: tuple[str, ...] = ()  # with negation: the predicates whose candidate atoms may also appear negated
    amalgamation: str = "replace"  # the sketch's, one of AMALGAMATIONS
    repeats_left_out: int = 0  # candidate atoms left out because they repeat a variable (the sketch's repeat=)

    def fuzzy_inputs(self, learned: Collection[str]) -> list[int]:
        """The positions of the candidate atoms over ``learned`` relations: those a forward-chaining step reads
        from the run's valuation (the others are extensional, read once, as values)."""
        return [i for i, a in enumerate(self.inputs) if a.predicate in learned]


@dataclass
class RelationLayout:
    """Where a relation's ground atoms live in a world's valuation vector: from ``offset``, either every
    atom of the grid ``shape`` in row-major order (dense), or (sparse, ``atoms`` set) only the atoms whose
    row-major grid indices the world's ``keys/<relation>`` array lists, ascending; an atom of a sparse
    relation that is not listed reads the world's always-false slot."""

    offset: int
    shape: tuple[int, ...]
    types: tuple[str, ...]
    atoms: int | None = None  # sparse: how many atoms are laid out; None: dense

    @property
    def size(self) -> int:
        """Slots the relation takes: its grid (exact: a Python int, 1 for a nullary relation), or its atoms."""
        return math.prod(self.shape) if self.atoms is None else self.atoms

    @property
    def grid(self) -> int:
        """Ground atoms the relation has over the world's domains, laid out or not."""
        return math.prod(self.shape)

    @property
    def sparse(self) -> bool:
        return self.atoms is not None


def layout_slots(entry: RelationLayout, keys: np.ndarray | None, flat: np.ndarray, false_slot: int) -> np.ndarray:
    """Valuation slots of atoms given by their row-major grid indices in ``entry``'s relation (``keys``: the
    sparse relation's listed indices); the false slot where an index is -1 or, sparse, not listed."""
    if keys is None:
        slots = entry.offset + flat
        return np.where(flat < 0, false_slot, slots) if flat.size and flat.min() < 0 else slots
    if not keys.size:
        return np.full(flat.shape, false_slot, dtype=np.int64)
    rank = np.minimum(np.searchsorted(keys, flat), keys.size - 1)  # -1 is never a key: the false slot
    return np.where(keys[rank] == flat, entry.offset + rank, false_slot)


UNLABELLED = "unlabelled/slots"  # WorldIR.unlabelled_slots


@dataclass
class WorldIR:
    """One world: its valuation layout, domains, and per learned predicate the index arrays."""

    name: str
    atoms: int  # length of the valuation vector: every ground atom, then one always-false slot
    layout: dict[str, RelationLayout]
    domains: dict[str, list[int]]  # type -> constant ids, in slot order
    substitutions: dict[str, int]  # learned predicate -> substitutions kept
    pruned: dict[str, int]  # learned predicate -> substitutions pruned
    arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def gather(self, predicate: str) -> np.ndarray:
        """(substitutions, inputs) valuation slots each substitution reads, head-sorted."""
        return self.arrays[f"{predicate}/gather"]

    def scatter(self, predicate: str) -> np.ndarray:
        """(substitutions,) valuation slot of the head atom each substitution writes, sorted."""
        return self.arrays[f"{predicate}/scatter"]

    def grid(self, predicate: str) -> np.ndarray:
        """(substitutions,) each substitution's flat index in the grid of the predicate's variable domains
        (row-major, in variable order), head-sorted."""
        return self.arrays[f"{predicate}/grid"]

    def pointers(self, predicate: str) -> np.ndarray:
        """CSR pointers over the predicate's head atoms into the sorted substitutions."""
        return self.arrays[f"{predicate}/ptr"]

    @property
    def valuation(self) -> np.ndarray:
        """Initial valuations (float32): 1 for true extensional atoms, 0 elsewhere."""
        return self.arrays["valuation"]

    @property
    def example_slots(self) -> np.ndarray:
        return self.arrays["examples/slots"]

    @property
    def example_labels(self) -> np.ndarray:
        return self.arrays["examples/labels"]

    @property
    def unlabelled_slots(self) -> np.ndarray:
        """A subgraph's atoms of learned predicates that it cannot label (compiler.subgraph.cut_short): no
        example, and in a closed world no negative either."""
        return self.arrays.get(UNLABELLED, np.zeros(0, dtype=np.int64))

    def run_slots(self, learned: dict[str, LearnedIR]) -> np.ndarray:
        """The slots, ascending, of the valuation a training run updates step by step: every learned relation's
        atoms, the examples, and any other slot a learned candidate atom reads (the false slot). Extensional
        atoms keep their values through a run, so the runtime reads them once, as values, not from it."""
        kept = np.zeros(self.atoms, dtype=bool)
        kept[self.example_slots] = True
        for name, ir in learned.items():
            entry = self.layout[name]
            kept[entry.offset : entry.offset + entry.size] = True
            fuzzy = ir.fuzzy_inputs(learned)
            if fuzzy:
                kept[self.gather(name)[:, fuzzy]] = True
        return np.flatnonzero(kept)

    def keys(self, predicate: str) -> np.ndarray | None:
        """The grid indices of a sparse relation's laid-out atoms, ascending; None for a dense one."""
        return self.arrays[f"keys/{predicate}"] if self.layout[predicate].sparse else None

    def atom_slots(self, predicate: str, flat: np.ndarray) -> np.ndarray:
        """Valuation slots of ``predicate``'s atoms at row-major grid indices ``flat`` (see :func:`layout_slots`)."""
        return layout_slots(self.layout[predicate], self.keys(predicate), flat, self.atoms - 1)

    def atom_slot(self, predicate: str, positions: tuple[int, ...]) -> int:
        """The slot of one atom given by its arguments' domain positions (the false slot if not laid out)."""
        layout = self.layout[predicate]
        flat = int(np.ravel_multi_index(positions, layout.shape)) if layout.shape else 0
        return int(self.atom_slots(predicate, np.array([flat], dtype=np.int64))[0])

    def decode_slot(self, slot: int) -> tuple[str, tuple[int, ...]]:
        """(relation, constant ids) of a valuation slot."""
        for name, layout in self.layout.items():
            if layout.offset <= slot < layout.offset + layout.size:
                flat = slot - layout.offset
                if layout.sparse:
                    flat = int(self.arrays[f"keys/{name}"][flat])
                positions = np.unravel_index(flat, layout.shape) if layout.shape else ()
                return name, tuple(self.domains[t][int(p)] for t, p in zip(layout.types, positions, strict=True))
        raise IndexError(f"slot {slot} is outside the valuation vector")


@dataclass
class WholeWorld:
    """A world whose training saw a subgraph of it, kept whole for verification: ``facts/<relation>`` (facts,
    arity) constant ids of every relation the learned rules can read, ``examples/<predicate>`` and
    ``labels/<predicate>`` its given examples, and each closed predicate's number of ground atoms."""

    name: str
    entities: int  # constants in the world
    sampled: int  # constants in the subgraph trained on
    closed: dict[str, int]
    arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    given: tuple[int, int] = (0, 0)  # given examples of the learned predicates: in the subgraph, in the world


@dataclass
class CompiledProgram:
    version: str
    sketch_hash: str
    steps: int
    symbols: list[str | int]
    relations: dict[str, dict[str, Any]]  # name -> {"types": [...], "learned": bool}
    learned: dict[str, LearnedIR]
    strata: list[list[str]]
    recursive: list[str]
    dependencies: list[tuple[str, str, bool]]  # (body predicate, head predicate, through negation)
    worlds: list[WorldIR]
    types: dict[str, str] = field(default_factory=dict)  # type name -> base type (symbol or number)
    closed: list[str] = field(default_factory=list)  # closed-world learned predicates: a non-positive atom is false
    whole: list[WholeWorld] = field(default_factory=list)  # per world, when trained on a subgraph of it
    noise: float | None = None  # the sketch's .noise: training's default tolerance of wrong labels
    warnings: list[str] = field(default_factory=list)  # rendered compile warnings (not saved)
    inputs: dict[str, str] = field(default_factory=dict)  # each file read (sketch, includes, facts) -> SHA-256
    # what later stages derive from the program (decoded symbols, export names, checked worlds), kept by
    # :meth:`once`; a copy made with dataclasses.replace or copy.copy starts without it
    _derived: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __copy__(self) -> CompiledProgram:
        copied = object.__new__(CompiledProgram)
        copied.__dict__.update(self.__dict__)
        copied._derived = {}
        return copied

    def once(self, key: Any, compute: Callable[[], T]) -> T:
        """``compute()``, computed on the first call for ``key`` and kept with the program: every stage after
        compilation reads the same decoded symbols, names and facts instead of decoding them again."""
        if key not in self._derived:
            self._derived[key] = compute()
        return self._derived[key]

    @property
    def symbol_table(self) -> SymbolTable:
        """The symbols decoded into a table (ids both ways), once."""
        return self.once("symbols", lambda: SymbolTable.from_json(self.symbols))

    def summary(self) -> dict[str, Any]:
        """The figures ``nlndl compile`` prints (and ``--json`` emits)."""
        subst = sum(n for w in self.worlds for n in w.substitutions.values())
        pruned = sum(n for w in self.worlds for n in w.pruned.values())
        entries = sum(int(a.size) for w in self.worlds for k, a in w.arrays.items() if k.endswith("/gather"))
        return {
            "predicates": sum(projection_of(name) is None for name in self.relations),
            "learned": sorted(self.learned),
            "strata": [s for s in ([n for n in st if projection_of(n) is None] for st in self.strata) if s],
            "recursive": self.recursive,
            "worlds": len(self.worlds),
            "steps": self.steps,
            "atoms": sum(w.atoms - 1 for w in self.worlds),  # ground atoms; the always-false slot not counted
            "dense_atoms": sum(e.grid for w in self.worlds for e in w.layout.values()),  # what a dense layout holds
            "sparse": sorted({name for w in self.worlds for name, e in w.layout.items() if e.sparse}),
            "substitutions": subst,
            "pruned": pruned,
            "index_entries": entries,
            "bytes": sum(int(a.nbytes) for w in self.worlds for a in w.arrays.values()),
            "subgraph": [
                {
                    "world": w.name,
                    "entities": w.sampled,
                    "of": w.entities,
                    "examples": w.given[0],
                    "examples_of": w.given[1],
                }
                for w in self.whole
            ],
        }

    def save(self, out: Path) -> None:
        """Write ``out/program.json`` and ``out/arrays.safetensors`` (``out`` is created if needed)."""
        out.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": FORMAT,
            "version": self.version,
            "sketch_hash": self.sketch_hash,
            "steps": self.steps,
            "symbols": self.symbols,
            "relations": self.relations,
            "learned": {k: asdict(v) for k, v in self.learned.items()},
            "strata": self.strata,
            "recursive": self.recursive,
            "dependencies": [list(d) for d in self.dependencies],
            "types": self.types,
            "closed": self.closed,
            "noise": self.noise,
            "worlds": [
                {
                    "name": w.name,
                    "atoms": w.atoms,
                    "layout": {k: asdict(v) for k, v in w.layout.items()},
                    "domains": w.domains,
                    "substitutions": w.substitutions,
                    "pruned": w.pruned,
                }
                for w in self.worlds
            ],
            "whole": [
                {
                    "name": w.name,
                    "entities": w.entities,
                    "sampled": w.sampled,
                    "closed": w.closed,
                    "given": list(w.given),
                }
                for w in self.whole
            ],
        }
        arrays = {f"{i}/{k}": np.ascontiguousarray(v) for i, w in enumerate(self.worlds) for k, v in w.arrays.items()}
        for i, w in enumerate(self.whole):
            arrays |= {f"whole/{i}/{k}": np.ascontiguousarray(v) for k, v in w.arrays.items()}
        save_file(arrays, str(out / "arrays.safetensors"), metadata={"format": FORMAT})
        (out / "program.json").write_text(json.dumps(meta, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> CompiledProgram:
        """Read a program saved by :meth:`save`; raises ValueError on anything else."""
        try:
            meta = json.loads((path / "program.json").read_text())
            arrays = load_file(str(path / "arrays.safetensors"))
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                found = meta.get("format") if isinstance(meta, dict) else None
                raise ValueError(f"unknown format {found!r}, expected {FORMAT}")
            return cls._from_saved(meta, arrays)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, SafetensorError) as exc:
            raise ValueError(f"{path}: not a compiled nlndl program ({type(exc).__name__}: {exc})") from None

    @classmethod
    def _from_saved(cls, meta: dict, arrays: dict[str, np.ndarray]) -> CompiledProgram:
        learned = {
            k: LearnedIR(
                **{
                    **v,
                    "var_types": tuple(v["var_types"]),
                    "negated": tuple(v["negated"]),
                    "inputs": [InputAtom(a["predicate"], tuple(a["vars"]), tuple(a["funcs"])) for a in v["inputs"]],
                }
            )
            for k, v in meta["learned"].items()
        }
        worlds = []
        for i, w in enumerate(meta["worlds"]):
            layout = {
                k: RelationLayout(v["offset"], tuple(v["shape"]), tuple(v["types"]), v["atoms"])
                for k, v in w["layout"].items()
            }
            prefix = f"{i}/"
            own = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
            worlds.append(WorldIR(w["name"], w["atoms"], layout, w["domains"], w["substitutions"], w["pruned"], own))
        whole = []
        for i, w in enumerate(meta["whole"]):
            prefix = f"whole/{i}/"
            own = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
            given = tuple(w.get("given", (0, 0)))
            whole.append(WholeWorld(w["name"], w["entities"], w["sampled"], dict(w["closed"]), own, given))
        return cls(
            meta["version"],
            meta["sketch_hash"],
            meta["steps"],
            meta["symbols"],
            meta["relations"],
            learned,
            meta["strata"],
            meta["recursive"],
            [tuple(d) for d in meta["dependencies"]],
            worlds,
            meta["types"],
            list(meta["closed"]),
            whole,
            meta.get("noise"),
        )


def projected(relation: str, position: int) -> str:
    """The name of ``relation``'s projection onto argument ``position``: ``edge[0](X)`` holds where ``edge(X, _)``
    does. Brackets stand in no declared name, so the two never meet; learned rules are written with ``_``."""
    return f"{relation}[{position}]"


def projection_of(name: str) -> tuple[str, int] | None:
    """(relation, position) of a :func:`projected` name; None for a declared relation."""
    if not name.endswith("]") or "[" not in name:
        return None
    relation, _, position = name[:-1].rpartition("[")
    return relation, int(position)


def var_name(index: int) -> str:
    """Canonical variable names: A, B, ..., Z, then V26, V27, ..."""
    return chr(ord("A") + index) if index < 26 else f"V{index}"


def render_term(var: int, func: str | None) -> str:
    return f"{func}({var_name(var)})" if func else var_name(var)


def render_input(atom: InputAtom) -> str:
    return f"{atom.predicate}({','.join(render_term(v, f) for v, f in zip(atom.vars, atom.funcs, strict=True))})"
