"""Lowering: grounded worlds -> per-world valuation layout and index arrays.

Every substitution of constants for a learned predicate's variables reads the valuation slots of its input
atoms (gather) and writes p's head atom (scatter).

Pruning (``prune=extensional``, the default; under ``prune=auto`` only for predicates whose substitution
grid, summed over worlds, exceeds PRUNE_ABOVE) keeps a substitution only if each extra variable is
either bound by a true extensional input atom (``InputAtom.binds``: not ``same(V, V)``) or takes the first
constant of its domain. This is sound for every clause in which each extra variable either does not occur
or occurs in at least one positive extensional body atom that binds it (see docs/language.md).
``prune=path`` asks more of an extra variable: true extensional atoms that join it to two other variables (a
path through it, as a knowledge graph's rules run from head to tail), which keeps a hub's thousands of
neighbours out of every substitution of its triples.
"""

from __future__ import annotations

import math

import numpy as np

from nlndl.compiler import examples
from nlndl.compiler.check import Checked, LearnSpec
from nlndl.compiler.diagnostics import Diagnostics, Span, size_text
from nlndl.compiler.ground import GroundWorld, count_inputs, input_list, readable
from nlndl.compiler.ir import UNLABELLED, InputAtom, LearnedIR, WorldIR
from nlndl.compiler.join import JoinTooLarge, joinable, kept_by_join, sorted_unique
from nlndl.compiler.layout import DENSE_ATOMS, Layout, fact_keys, valuation
from nlndl.compiler.layout import build as layout_build

CHUNK = 1 << 20  # substitutions enumerated at a time
MAX_SUBSTITUTIONS = 2_000_000_000  # beyond this a walk over the grid is refused
MAX_GRID = 2**62  # joins never walk the grid, but its flat indices must fit in int64
VALUATION_BYTES = 16  # per ground atom: the float32 valuation, example slots and labels, and the atom table
# per example atom while the examples are listed, sorted and demanded (each an int64 grid index several times
# over: the complement of a closed world, its sort, the demand's frontier and unravelled substitution heads);
# measured: a 10^8-atom closed world (the N = 10,000 forest) peaked at 16.9 GB, about 170 bytes an example
EXAMPLE_BYTES = 160
MAX_INPUTS = 20_000  # candidate body atoms of one learned predicate (Sorting has 176)
BITMAP_GRID = 1 << 28  # demanded atoms found with a bitmap over a learned relation's grid up to this size
WHOLE_DEMAND = 0.5  # a learned predicate with more of its atoms demanded is laid out whole, densely
SUBGRAPH_HINT = "--subgraph 100"  # what the refusals of a large world suggest (compiler.subgraph)
PRUNE_ABOVE = 20_000  # prune=auto prunes a predicate whose grid (all worlds) is larger than this


def function_maps(checked: Checked, world: GroundWorld, diags: Diagnostics) -> dict[str, np.ndarray]:
    """For each declared function f: domain position of x -> domain position of f(x), or -1 if undefined."""
    maps = {}
    for name, span in checked.sketch.functions:
        arg_type, out_type = (a.type for a in checked.relations[name].attributes)
        position, seen = world.positions[out_type], world.positions[arg_type]
        table = np.full(len(world.domains[arg_type]), -1, dtype=np.int64)
        for x, y in sorted(world.db.get(name, ())):
            if table[seen[x]] >= 0 and table[seen[x]] != position[y]:
                diags.error(span, f".function {name}: {name} has two values for one argument in world {world.name}")
                break
            table[seen[x]] = position[y]
        maps[name] = table
    return maps


class Lowering:
    """Enumerates, prunes and indexes the substitutions of one learned predicate in one world."""

    def __init__(
        self,
        spec: LearnSpec,
        inputs: list[InputAtom],
        world: GroundWorld,
        layout: Layout,
        values: np.ndarray,
        learned: set[str],
        functions: dict[str, np.ndarray],
        prune: bool,
        checked: Checked,
    ) -> None:
        self.spec, self.inputs, self.layout, self.values, self.prune = spec, inputs, layout.entries, values, prune
        self.lookup = layout
        self.functions = functions
        self.function_types = {f: tuple(a.type for a in checked.relations[f].attributes) for f in spec.functions}
        self.world = world
        self.lifts: dict[tuple[str, str], np.ndarray] = {}  # (subtype, supertype) -> position table
        self.sizes = tuple(len(world.domains[t]) for t in spec.var_types)
        self.total = math.prod(self.sizes)  # a Python int: exact however large
        self.extensional = [a for a in inputs if a.predicate not in learned]

    def flat(self, atom: InputAtom, theta: tuple[np.ndarray, ...]) -> np.ndarray:
        """The grid index of ``atom`` in its relation under each substitution (-1 where a function is undefined)."""
        entry = self.layout[atom.predicate]
        if not entry.shape:
            return np.zeros(theta[0].shape if theta else (1,), dtype=np.int64)
        args = []
        for v, f, want in zip(atom.vars, atom.funcs, entry.types, strict=True):
            x, have = theta[v], self.spec.var_types[v]
            if f is not None:
                arg_type, have = self.function_types[f]
                x = self.functions[f][self.lift(x, self.spec.var_types[v], arg_type)]
            args.append(self.lift(x, have, want))
        if not any(atom.funcs):  # every argument is defined: a plain row-major index
            return np.ravel_multi_index(tuple(args), entry.shape)
        undefined = np.zeros(args[0].shape, dtype=bool)
        for a in args:
            undefined |= a < 0
        return np.where(undefined, -1, np.ravel_multi_index(tuple(np.maximum(a, 0) for a in args), entry.shape))

    def slots(self, atom: InputAtom, theta: tuple[np.ndarray, ...]) -> np.ndarray:
        """The valuation slot of ``atom`` under each substitution (the false slot where a function is undefined
        or, in a sparse layout, the atom is not laid out)."""
        return self.lookup.slots(atom.predicate, self.flat(atom, theta))

    def lift(self, x: np.ndarray, sub: str, sup: str) -> np.ndarray:
        """Domain positions of type ``sub`` as positions in the domain of its supertype ``sup`` (-1 stays -1)."""
        if sub == sup:
            return x
        if (sub, sup) not in self.lifts:
            positions = [self.world.positions[sup][c] for c in self.world.domains[sub]]
            self.lifts[(sub, sup)] = np.array(positions + [-1], dtype=np.int64)
        return self.lifts[(sub, sup)][x]  # x = -1 (an undefined function value) reads the trailing -1

    @property
    def head_atom(self) -> InputAtom:
        """The clause head p(V0, ..., Vk-1): the first head_arity variables."""
        return InputAtom(self.spec.predicate, tuple(range(self.spec.head_arity)))

    @property
    def pruning(self) -> bool:
        return self.prune and self.spec.extra > 0

    @property
    def method(self) -> str:
        """How the kept substitutions are enumerated: ``join`` over the facts where the pruning rule applies
        and every extensional atom over an extra variable is a plain relation, else a ``walk`` of the grid."""
        return "join" if self.pruning and joinable(self) else "walk"

    @property
    def partners(self) -> int:
        """The other variables true extensional atoms must join an extra variable to: one, or under
        ``prune=path`` two (as many as there are)."""
        return min(2, self.spec.vars - 1) if self.spec.prune == "path" else 1

    def bound(self, theta: tuple[np.ndarray, ...]) -> np.ndarray:
        """The pruning rule on substitutions ``theta``: each extra variable is at its domain's first constant or
        in true extensional candidate atoms with :attr:`partners` other variables (one: any true atom that binds it)."""
        keep = np.ones(theta[0].shape, dtype=bool)
        for var in range(self.spec.head_arity, self.spec.vars):
            if self.partners == 1:
                bound = np.zeros(theta[0].shape, dtype=bool)
                for atom in self.extensional:
                    if atom.binds(var):
                        bound |= self.values[self.slots(atom, theta)] > 0
            else:
                joined: dict[int, np.ndarray] = {}
                for atom in self.extensional:
                    if atom.binds(var):
                        true = self.values[self.slots(atom, theta)] > 0
                        for other in set(atom.vars) - {var}:
                            joined[other] = joined.get(other, False) | true
                count = sum((j.astype(np.int64) for j in joined.values()), np.zeros(theta[0].shape, dtype=np.int64))
                bound = count >= self.partners
            keep &= bound | (theta[var] == 0)
        return keep

    def kept(self, heads: np.ndarray | None = None, memory_limit: int = 2**62) -> np.ndarray:
        """Flat indices (into the substitution grid, ascending) of the substitutions that survive pruning;
        with ``heads`` (sorted distinct grid indices of head atoms), only those whose head atom is one of
        them. By joins where :attr:`method` says so (JoinTooLarge(predicate, message) past ``memory_limit``),
        else by :meth:`walk`."""
        if self.method == "join":
            try:
                return kept_by_join(self, heads, memory_limit)
            except JoinTooLarge as exc:
                raise JoinTooLarge(self.spec.predicate, *exc.args) from None
        return self.walk(heads)

    def walk(self, heads: np.ndarray | None = None) -> np.ndarray:
        """:meth:`kept` by a walk over the whole grid in chunks (the reference the joins are tested against);
        with ``heads``, over the given head atoms' part of it where that is smaller."""
        extra = math.prod(self.sizes[self.spec.head_arity :])
        by_heads = heads is not None and heads.size * extra < self.total
        count = heads.size * extra if by_heads else self.total
        chunks = []
        for start in range(0, count, CHUNK):
            flat = np.arange(start, min(start + CHUNK, count), dtype=np.int64)
            if by_heads:  # the head variables lead the grid's row-major order
                flat = heads[flat // extra] * extra + flat % extra
            if heads is None and not self.pruning:
                chunks.append(flat)
                continue
            theta = np.unravel_index(flat, self.sizes)
            keep = np.ones(flat.shape, dtype=bool)
            if heads is not None and not by_heads:
                keep = np.isin(self.flat(self.head_atom, theta), heads)
            if self.pruning:
                keep &= self.bound(theta)
            chunks.append(flat[keep])
        return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)

    def arrays(self, kept: np.ndarray) -> dict[str, np.ndarray]:
        theta = np.unravel_index(kept, self.sizes) if kept.size else tuple(np.zeros(0, np.int64) for _ in self.sizes)
        gather = np.empty((kept.size, len(self.inputs)), dtype=np.int64)
        for i, atom in enumerate(self.inputs):
            gather[:, i] = self.slots(atom, theta)
        scatter = self.slots(self.head_atom, theta) if kept.size else np.zeros(0, dtype=np.int64)
        if scatter.size and (scatter[1:] < scatter[:-1]).any():  # kept is ascending, so head-sorted already
            order = np.argsort(scatter, kind="stable")
            gather, scatter, kept = gather[order], scatter[order], kept[order]
        entry = self.layout[self.spec.predicate]
        counts = np.bincount(scatter - entry.offset, minlength=entry.size)
        ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        name = self.spec.predicate
        return {
            f"{name}/gather": gather,
            f"{name}/scatter": scatter.astype(np.int64),
            f"{name}/ptr": ptr,
            f"{name}/grid": kept,  # each substitution's flat index in the grid of its variables' domains
        }


MAX_WARNINGS = 5  # underivable positive examples reported per learned predicate and world


def example_slot(world: GroundWorld, layout: Layout, name: str, args: tuple[int, ...]) -> int:
    """Where the ground atom name(args) lives in the world's valuation (the false slot if not laid out)."""
    entry = layout.entries[name]
    pos = tuple(world.positions[t][c] for t, c in zip(entry.types, args, strict=True))
    flat = int(np.ravel_multi_index(pos, entry.shape)) if entry.shape else 0
    return int(layout.slots(name, np.array([flat], dtype=np.int64))[0])


def derivable_heads(
    spec: LearnSpec, inputs: list[InputAtom], arrays: dict[str, np.ndarray], learned: set[str]
) -> set[int]:
    """Head slots of ``spec`` that some safe clause could derive: at one of its kept substitutions, every head
    variable is in a candidate atom that holds there (an extensional fact) or may (a learned atom)."""
    p = spec.predicate
    gather, scatter, values = arrays[f"{p}/gather"], arrays[f"{p}/scatter"], arrays["valuation"]
    possible = np.ones(len(scatter), dtype=bool)
    for var in range(spec.head_arity):
        binding = [i for i, a in enumerate(inputs) if var in a.vars]
        if any(inputs[i].predicate in learned for i in binding):
            continue  # a learned atom may hold anywhere
        held = np.zeros(len(scatter), dtype=bool)
        for i in binding:
            held |= values[gather[:, i]] > 0
        possible &= held
    return set(scatter[possible].tolist())


def underivable(
    world: GroundWorld,
    layout: Layout,
    heads: dict[str, set[int]],
    diags: Diagnostics,
    shard: set[int] | None = None,
    known: set[int] | None = None,
    sampled: bool = False,
) -> None:
    """Warn of each positive example of a learned predicate that no safe clause the network can represent
    derives: one with a constant in none of the whole world's extensional facts (``known``; None where a
    learned candidate atom applies a function, which can make new constants), or one that
    :func:`derivable_heads` rules out. The first ``MAX_WARNINGS`` per predicate and world; the last of them
    counts the rest. With ``shard`` (the slots of this shard's examples), only the shard's examples. On a
    subgraph (``sampled``) only the first kind: the facts that derive an example may lie outside it, and the
    rules are verified on the whole world."""
    missed = []
    for name, args, positive, span in world.examples:
        if not positive or name not in heads:
            continue
        stray = known is not None and any(c not in known for c in args)
        if sampled and not stray:
            continue
        slot = example_slot(world, layout, name, args)
        if (shard is None or slot in shard) and (stray or slot not in heads[name]):
            missed.append((name, span, stray))
    where = f" in world {world.name}" if world.name != "main" else ""
    for name in sorted({name for name, _, _ in missed}):
        found = [(span, stray) for n, span, stray in missed if n == name]
        for i, (span, stray) in enumerate(found[:MAX_WARNINGS]):
            more = len(found) - MAX_WARNINGS
            why = (
                "a constant of it occurs in no fact (misspelt, or written otherwise in the facts?)"
                if stray
                else f"no candidate atom of {name} that could hold there binds every head variable "
                "(is a constant misspelt, or in no fact?)"
            )
            diags.warning(
                span,
                f"no learnable clause derives this positive example{where}: {why}"
                + (f"; {more} more {name} example(s) like it" if i == MAX_WARNINGS - 1 and more > 0 else ""),
            )


def example_arrays(layout: Layout, labelled: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    """Example slots, ascending, and their 0/1 labels."""
    slots = [layout.slots(name, flat) for name, (flat, _) in labelled.items()]
    labels = [lab for _, lab in labelled.values()]
    slots_all = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
    labels_all = np.concatenate(labels) if labels else np.zeros(0, dtype=np.float32)
    order = np.argsort(slots_all, kind="stable")
    return {"examples/slots": slots_all[order], "examples/labels": labels_all[order]}


def _new_atoms(parts: list[np.ndarray], known: np.ndarray, grid: int) -> np.ndarray:
    """The sorted distinct grid indices in ``parts`` that are not in the sorted ``known``: by a bitmap over the
    grid where it is small (a pass over the reads), else by a sort."""
    if not parts:
        return np.zeros(0, dtype=np.int64)
    if grid <= BITMAP_GRID:
        mark = np.zeros(grid, dtype=bool)
        for part in parts:
            mark[part] = True
        mark[known] = False
        return np.flatnonzero(mark)
    return np.setdiff1d(sorted_unique(np.concatenate(parts)), known, assume_unique=True)


def demand(
    lowerings: dict[str, Lowering], wanted: dict[str, np.ndarray], memory_limit: int, whole: float = WHOLE_DEMAND
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The demanded atoms of each learned predicate (sorted grid indices) and the kept substitutions that
    write them: from the example atoms, every learned atom that a demanded atom's substitutions read, to the
    fixpoint (a superset of what T steps read, so the forward chaining computes what the dense layout
    would at every example). A predicate with more than the fraction ``whole`` of its atoms demanded is
    demanded whole at once (its closure would reach about that anyway, a round per step). JoinTooLarge
    when the substitutions' index arrays would pass ``memory_limit``."""
    empty = np.zeros(0, dtype=np.int64)
    grids = {p: low.layout[p].grid for p, low in lowerings.items()}
    demanded = {p: wanted.get(p, empty) for p in lowerings}
    frontier = dict(demanded)

    def widen(p: str) -> None:  # demanded past ``whole`` of the grid: all of it, the rest in the frontier
        if frontier[p].size and demanded[p].size > whole * grids[p]:
            mark = np.ones(grids[p], dtype=bool)  # the frontier grows by every atom not yet demanded
            mark[demanded[p]] = False
            mark[frontier[p]] = True
            frontier[p] = np.flatnonzero(mark)
            demanded[p] = np.arange(grids[p], dtype=np.int64)

    for p in lowerings:
        widen(p)
    kept: dict[str, list[np.ndarray]] = {p: [] for p in lowerings}
    held = 0
    while any(f.size for f in frontier.values()):
        reads: dict[str, list[np.ndarray]] = {p: [] for p in lowerings}
        for p, low in lowerings.items():
            if not frontier[p].size:
                continue
            found = low.kept(frontier[p], memory_limit)
            kept[p].append(found)
            held += index_bytes(found.size, len(low.inputs))
            if held > memory_limit:
                raise JoinTooLarge(
                    p,
                    f"the demanded atoms' substitutions would take more than {size_text(held)} of index "
                    f"arrays, over the limit of {size_text(memory_limit)}; reduce vars, restrict body=[...], "
                    "or raise --memory-limit",
                )
            theta = np.unravel_index(found, low.sizes)
            for atom in low.inputs:
                if atom.predicate in lowerings:
                    flat = low.flat(atom, theta)
                    reads[atom.predicate].append(flat[flat >= 0])
        for q, parts in reads.items():
            frontier[q] = _new_atoms(parts, demanded[q], grids[q])
            demanded[q] = np.sort(np.concatenate([demanded[q], frontier[q]]), kind="stable")  # two sorted runs
            widen(q)
    return demanded, {p: np.sort(np.concatenate(parts)) if parts else empty for p, parts in kept.items()}


def index_bytes(substitutions: int, inputs: int) -> int:
    """What the index arrays of a learned predicate take, estimated before they are built: per kept
    substitution an int64 gather slot per candidate atom, its scatter slot and its grid index (the CSR
    pointers, one per head atom, not counted)."""
    return substitutions * (inputs + 2) * 8


def prunes(spec: LearnSpec, worlds: list[GroundWorld]) -> bool:
    """Whether ``spec``'s substitutions are pruned: always, never, or (auto) when its grid is large."""
    if spec.prune != "auto":
        return spec.prune in ("extensional", "path")
    grid = sum(math.prod(len(w.domains[t]) for t in spec.var_types) for w in worlds)
    return grid > PRUNE_ABOVE


def learned_ir(spec: LearnSpec, inputs: list[InputAtom], pruned: bool, left_out: int = 0) -> LearnedIR:
    return LearnedIR(
        spec.predicate,
        spec.head_arity,
        spec.var_types,
        spec.form,
        spec.terms,
        spec.negation,
        spec.invented,
        inputs,
        pruned,
        spec.negated if spec.negation else (),
        spec.amalgamation,
        left_out,
    )


def _refuse_valuation(
    diags: Diagnostics,
    span: Span,
    world: GroundWorld,
    atoms: int,
    largest: str,
    size: int,
    memory_limit: int,
    what: str,
) -> None:
    per = EXAMPLE_BYTES if what == "examples" else VALUATION_BYTES
    diags.error(
        span,
        f"the {what} of world {world.name} would hold {atoms:,} ground atoms "
        f"({size_text(atoms * per)} with its examples and training copies; {largest} alone "
        f"{size:,}), over the limit of {size_text(memory_limit)}; "
        + ("sample the closed world (.closed p(sample=K)), " if what == "examples" else "")
        + f"train on a subgraph ({SUBGRAPH_HINT}), reduce the domains or raise --memory-limit",
    )


def lower(
    checked: Checked,
    worlds: list[GroundWorld],
    diags: Diagnostics,
    memory_limit: int,
    seed: int = 0,
    layout_kind: str = "auto",
    shard: tuple[int, int] = (0, 1),
    known: list[set[int]] | None = None,
) -> tuple[dict[str, LearnedIR], list[WorldIR]]:
    """Index arrays of every learned predicate in every world; refused up front past the memory limit.
    ``layout_kind``: dense, sparse, or auto (sparse where the dense valuation passes DENSE_ATOMS); ``seed``
    draws the sampled closed-world negatives. ``shard`` (rank, size): only that share of each world's examples
    (examples.share), with the atoms their substitutions read, for one of ``size`` processes. ``known``: the
    worlds are subgraphs, and per world the constants of the whole world's extensional facts (see
    :func:`underivable`; without it, each world's own)."""
    learned = set(checked.learned)
    used = readable(checked)
    relations = [r for r in checked.relations if r in used]
    for p, spec in checked.learned.items():
        count = count_inputs(spec, checked)
        if count > MAX_INPUTS:
            diags.error(
                spec.span,
                f"{p} would have {count:,} candidate body atoms (at most {MAX_INPUTS:,}); "
                "reduce vars or restrict body=[...]",
            )
    if diags:
        return {}, []
    candidates = {p: input_list(spec, checked) for p, spec in checked.learned.items()}
    inputs = {p: c.atoms for p, c in candidates.items()}
    closed = {name for name, _ in checked.sketch.closed}
    samples = checked.sketch.samples
    pruned = {p: prunes(spec, worlds) for p, spec in checked.learned.items()}
    # a learned predicate that no learned predicate reads matters only at its example atoms
    unread = learned - {a.predicate for atoms in inputs.values() for a in atoms}
    types = {name: tuple(a.type for a in checked.relations[name].attributes) for name in relations}
    first_span = next((spec.span for spec in checked.learned.values()), None)
    plans = []
    estimate = 0
    for index, world in enumerate(worlds):
        span = world.span or first_span
        grids = {name: (tuple(len(world.domains[t]) for t in types[name]), types[name]) for name in relations}
        sizes = {name: math.prod(shape) for name, (shape, _) in grids.items()}
        dense_atoms = sum(sizes.values()) + 1
        sparse = layout_kind == "sparse" or (layout_kind == "auto" and dense_atoms > DENSE_ATOMS)
        if not sparse and dense_atoms * VALUATION_BYTES > memory_limit:
            largest = max(sizes, key=lambda name: sizes[name])
            _refuse_valuation(diags, span, world, dense_atoms, largest, sizes[largest], memory_limit, "valuation")
            return {}, []
        shapes = {name: shape for name, (shape, _) in grids.items()}
        given = examples.given(world.examples, world.positions, types, shapes, diags)
        wanted = sum(f.size for f, _ in given.values()) + examples.closed_atoms(closed, samples, given, sizes)
        if wanted * EXAMPLE_BYTES > memory_limit:
            most = max(closed or given, key=lambda name: sizes[name])
            _refuse_valuation(diags, span, world, wanted, most, sizes[most], memory_limit, "examples")
            return {}, []
        labelled = examples.labelled(given, closed, samples, sizes, np.random.default_rng([seed, index]))
        if shard[1] > 1:
            labelled = examples.share(labelled, *shard)
        true = {
            name: fact_keys(world.fact_positions(name, types[name]), grids[name][0])
            for name in relations
            if name not in learned
        }
        functions = function_maps(checked, world, diags)

        def lowered(layout: Layout, values: np.ndarray, world=world, functions=functions) -> dict[str, Lowering]:
            return {
                p: Lowering(spec, inputs[p], world, layout, values, learned, functions, pruned[p], checked)
                for p, spec in checked.learned.items()
            }

        empty = np.zeros(0, dtype=np.int64)
        layout = layout_build(grids, {**true, **{p: empty for p in learned}} if sparse else {})
        values = valuation(layout, true)
        lowerings = lowered(layout, values)
        for p, spec in checked.learned.items():
            low = lowerings[p]
            if low.total > (MAX_GRID if low.method == "join" else MAX_SUBSTITUTIONS):
                diags.error(
                    spec.span,
                    f"{p} has {low.total:,} substitutions in world {world.name} "
                    f"(domains {' x '.join(map(str, low.sizes))}); reduce vars or the domains",
                )
                return {}, []
        try:
            if sparse:
                demanded, kept = demand(lowerings, {p: flat for p, (flat, _) in labelled.items()}, memory_limit)
                partial = {p: d for p, d in demanded.items() if d.size < lowerings[p].layout[p].grid}
                layout = layout_build(grids, {**true, **partial})  # a predicate demanded whole stays dense
                values = valuation(layout, true)
                lowerings = lowered(layout, values)
            else:
                kept = {}
                for p, low in lowerings.items():
                    kept[p] = low.kept(labelled.get(p, (empty, None))[0] if p in unread else None, memory_limit)
        except JoinTooLarge as exc:
            p, message = exc.args
            listed = sorted(closed - set(samples))
            if sparse and listed:
                message += f"; or sample the closed world (.closed {listed[0]}(sample=K))"
            message += f"; or train on a subgraph ({SUBGRAPH_HINT})"
            diags.error(checked.learned[p].span, f"{p} in world {world.name}: {message}")
            return {}, []
        estimate += sum(index_bytes(kept[p].size, len(inputs[p])) for p in kept)
        plans.append((world, layout, values, lowerings, kept, labelled))
    if estimate > memory_limit:
        worst = max(
            checked.learned.values(),
            key=lambda s: sum(pl[4][s.predicate].size for pl in plans) * (len(inputs[s.predicate]) + 2),
        )
        diags.error(
            worst.span,
            f"the index arrays would take {size_text(estimate)}, over the limit of "
            f"{size_text(memory_limit)}; reduce vars, restrict body=[...], train on a subgraph ({SUBGRAPH_HINT}) "
            "or raise --memory-limit",
        )
        return {}, []
    out = []
    functions = any(f is not None for atoms in inputs.values() for a in atoms for f in a.funcs)
    for i, (world, layout, values, lowerings, kept, labelled) in enumerate(plans):
        arrays = {"valuation": values, **layout.arrays()}
        subst, dropped = {}, {}
        for p, low in lowerings.items():
            arrays.update(low.arrays(kept[p]))
            subst[p], dropped[p] = int(kept[p].size), int(low.total - kept[p].size)
        dnf = [p for p, spec in checked.learned.items() if spec.form == "dnf"]  # a CNF has no safety gate
        heads = {p: derivable_heads(checked.learned[p], inputs[p], arrays, learned) for p in dnf}
        labelled, aside = examples.unlabel(labelled, types, world.domains, world.unlabelled)
        arrays.update(example_arrays(layout, labelled))
        if aside:  # a subgraph's atoms that it cannot label: unknown to training and its checks
            arrays[UNLABELLED] = np.sort(np.concatenate([layout.slots(name, flat) for name, flat in aside.items()]))
        mine = set(arrays["examples/slots"].tolist()) if shard[1] > 1 else None
        facts = None if functions else known[i] if known is not None else world.fact_constants(learned)
        underivable(world, layout, heads, diags, mine, facts, sampled=known is not None)
        out.append(WorldIR(world.name, layout.atoms, layout.entries, world.domains, subst, dropped, arrays))
    return {
        p: learned_ir(s, inputs[p], pruned[p], candidates[p].repeats_left_out) for p, s in checked.learned.items()
    }, out
