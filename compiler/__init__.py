"""nlndl compiler: program sketches and Tanner graphs to index arrays (numpy, never torch).

The pipeline reads straight through: parse -> check -> ground (facts, background closure) ->
lower (valuation layout, substitutions, index arrays). :func:`compile_sketch` runs all of it;
:func:`ground_sketch` stops before lowering, so that a growing subgraph is lowered again from there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nlndl import __version__
from nlndl.compiler.ast import Sketch
from nlndl.compiler.check import Checked, check
from nlndl.compiler.diagnostics import CompileError, Diagnostics
from nlndl.compiler.ground import GroundWorld, ground_worlds
from nlndl.compiler.ir import CompiledProgram
from nlndl.compiler.lowering import lower
from nlndl.compiler.parser import parse_file, parse_source, with_background
from nlndl.compiler.steps import default_steps
from nlndl.compiler.subgraph import MIN_ENTITIES, auto_choice, auto_entities, deep_recursion, grow, whole_world
from nlndl.compiler.subgraph import subgraph as sample
from nlndl.compiler.symbols import SymbolTable
from nlndl.defaults import COMPILE_MEMORY_BYTES, LAYOUTS, SUBGRAPH_DEEP, SUBGRAPH_WORK

DEFAULT_MEMORY_LIMIT = COMPILE_MEMORY_BYTES

__all__ = [
    "CompileError",
    "CompiledProgram",
    "Grounded",
    "SketchText",
    "compile_sketch",
    "default_steps",
    "ground_sketch",
]


@dataclass
class Grounded:
    """A sketch parsed, checked and grounded (its worlds' facts and examples): what lowering starts from, kept so
    that a subgraph can be grown and lowered again without reading the sketch again (:meth:`lower`)."""

    sketch: Sketch
    checked: Checked
    symbols: SymbolTable
    worlds: list[GroundWorld]
    sources: dict[str, str]
    memory_limit: int
    chosen: list[set[int]] = field(default_factory=list)  # per world, the subgraph's constants (lower)
    options: dict = field(default_factory=dict)  # the last lower's steps, seed, layout

    def grow(self, counterexamples: list[list[tuple[str, tuple[int, ...]]]]) -> CompiledProgram | None:
        """The program lowered last, its subgraphs grown from ``counterexamples`` (per world, ground atoms that
        rules learned on the subgraph get wrong on the whole world; compiler.subgraph.grow); None where that
        adds no constant."""
        seed = self.options.get("seed", 0)
        grown = [
            grow(self.checked, w, kept, atoms, seed)
            for w, kept, atoms in zip(self.worlds, self.chosen, counterexamples, strict=True)
        ]
        if all(g == kept for g, kept in zip(grown, self.chosen, strict=True)):
            return None
        return self.lower(**self.options, grown=grown)

    def lower(
        self,
        steps: int | None = None,
        seed: int = 0,
        layout: str = "auto",
        subgraph: int | str | None = None,
        shard: tuple[int, int] = (0, 1),
        grown: list[set[int]] | None = None,
        noisy: bool | None = None,
    ) -> CompiledProgram:
        """The compiled program (see :func:`compile_sketch`); ``grown``: per world, the constants of a grown
        subgraph (compiler.subgraph.grow), trained on instead of a drawn one; ``noisy``: whether the examples'
        labels may be wrong (training's --noise; None: whether the sketch says ``.noise``), which a drawn
        subgraph's sample of the given examples must not favour (compiler.subgraph.around_given)."""
        checked, worlds = self.checked, self.worlds
        noisy = bool(self.sketch.noise) if noisy is None else noisy
        around_landmarks = False
        if subgraph == "auto" and grown is None:
            choice = auto_choice(checked, worlds)
            if choice == "whole" and steps is None and not self.sketch.steps:
                whole_steps = default_steps(checked, (w.db for w in worlds))  # read once, whole or deep
                if deep_recursion(checked, worlds, whole_steps):
                    choice, around_landmarks = "deep", True  # the subgraph's steps are its own
                else:
                    steps = whole_steps
            if choice == "whole":
                return self.lower(steps, seed, layout, None, shard, noisy=noisy)
            if choice == "try":
                try:
                    program = self.lower(steps, seed, layout, None, shard, noisy=noisy)
                    if program.summary()["index_entries"] * program.steps <= SUBGRAPH_WORK:
                        return program
                except CompileError:  # refused whole (memory): a subgraph instead
                    pass
            subgraph = min(auto_entities(checked), SUBGRAPH_DEEP) if choice == "deep" else auto_entities(checked)
        self.options = {"steps": steps, "seed": seed, "layout": layout, "noisy": noisy}
        diags = Diagnostics(sources=dict(self.sources))
        whole = []
        if subgraph is not None or grown is not None:
            if shard[1] > 1:
                raise ValueError("a program trained on a subgraph is not sharded")
            starts = grown or [set() for _ in worlds]
            parts = [
                sample(
                    checked,
                    w,
                    len(s) if grown else subgraph,
                    np.random.default_rng([seed, i, 1]),
                    s,
                    around_landmarks,
                    noisy,
                )
                for i, (w, s) in enumerate(zip(worlds, starts, strict=True))
            ]
            self.chosen = [keep for _, keep in parts]
            whole = [whole_world(checked, w, s) for w, (s, _) in zip(worlds, parts, strict=True)]
            known = [w.fact_constants(set(checked.learned)) for w in worlds]
            worlds = [s for s, _ in parts]
        else:
            known = None
        learned, lowered = lower(checked, worlds, diags, self.memory_limit, seed, layout, shard, known)
        if diags:
            raise CompileError(diags)
        if steps is None:
            steps = self.sketch.steps[0] if self.sketch.steps else default_steps(checked, (w.db for w in worlds))
        digest = hashlib.sha256()
        for name in sorted(diags.sources):
            digest.update(name.encode() + b"\0" + diags.sources[name].encode() + b"\0")
        inputs = {str(Path(n).resolve()): hashlib.sha256(t.encode()).hexdigest() for n, t in diags.sources.items()}
        strata = checked.strata
        return CompiledProgram(
            version=__version__,
            sketch_hash=digest.hexdigest(),
            steps=steps,
            symbols=self.symbols.to_json(),
            relations={
                name: {
                    "types": [a.type for a in decl.attributes],
                    "attributes": [a.name for a in decl.attributes],
                    "learned": name in checked.learned,
                }
                for name, decl in checked.relations.items()
            },
            learned=learned,
            strata=[list(s) for s in strata.order] if strata else [],
            recursive=sorted(strata.recursive) if strata else [],
            dependencies=checked.dependencies,
            worlds=lowered,
            types=dict(checked.types),
            closed=sorted({name for name, _ in self.sketch.closed}),
            whole=whole,
            noise=self.sketch.noise[0] if self.sketch.noise else None,
            warnings=diags.render_warnings(),
            inputs=dict(sorted(inputs.items())),
        )


@dataclass(frozen=True)
class SketchText:
    """A sketch held in memory rather than in a file: its text, the name diagnostics locate it by, and the
    facts files its ``.input`` relations read, as text by relation (how nlndl.kg_rules compiles each relation)."""

    text: str
    name: str = "<sketch>"
    facts: Mapping[str, str] = field(default_factory=dict)
    parsed: Sketch | None = None  # the text already parsed, where its writer built the nodes (KGSketch.parsed)


def ground_sketch(
    path: Path | SketchText | Sketch,
    fact_dir: Path | None = None,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    background: tuple[Path, ...] = (),
) -> Grounded:
    """Parse, check and ground the sketch at ``path`` (or given as :class:`SketchText`, or already parsed: an
    ``ast.Sketch``, left as it is), with each ``background`` program's rules added; raises CompileError
    carrying every diagnostic."""
    if isinstance(path, Sketch):
        sketch, texts = with_background(path, tuple(background), memory_limit), None
    elif isinstance(path, SketchText) and path.parsed is not None:
        sketch, texts = with_background(path.parsed, tuple(background), memory_limit), path.facts
    elif isinstance(path, SketchText):
        sketch, texts = parse_source(path.text, path.name, tuple(background), memory_limit), path.facts
    else:
        sketch, texts = parse_file(path, tuple(background), memory_limit), None
    diags = Diagnostics(sources=dict(sketch.sources))
    checked = check(sketch, diags)
    symbols = SymbolTable()
    worlds = ground_worlds(checked, symbols, fact_dir, diags, memory_limit, texts)
    if diags:
        raise CompileError(diags)
    return Grounded(sketch, checked, symbols, worlds, dict(diags.sources), memory_limit)


def compile_sketch(
    path: Path | SketchText | Sketch,
    fact_dir: Path | None = None,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    steps: int | None = None,
    background: tuple[Path, ...] = (),
    seed: int = 0,
    layout: str = "auto",
    subgraph: int | str | None = None,
    shard: tuple[int, int] = (0, 1),
    noisy: bool | None = None,
) -> CompiledProgram:
    """Compile the sketch at ``path`` (or given as :class:`SketchText` or as an ``ast.Sketch``), with the rules
    of each ``background`` program (for example one an earlier ``nlndl train`` wrote) added as background;
    raises CompileError carrying every diagnostic. ``seed`` draws sampled closed-world negatives and the
    subgraph; ``layout`` is the valuation's: dense, sparse or auto; ``subgraph``: train on that many constants of
    each world around drawn positive examples (compiler.subgraph), the whole worlds kept for verification;
    "auto": so where a world is large (:func:`~nlndl.compiler.subgraph.auto_choice`); ``shard`` (rank, size): one
    of ``size`` processes' share of the examples, with the atoms their substitutions read (a sharded training
    run); ``noisy``: whether the examples' labels may be wrong (None: whether the sketch says ``.noise``), which
    a subgraph's sample of the given examples must not favour."""
    check_options(layout, subgraph, shard)
    grounded = ground_sketch(path, fact_dir, memory_limit, background)
    return grounded.lower(steps, seed, layout, subgraph, shard, noisy=noisy)


def check_options(layout: str, subgraph: int | str | None, shard: tuple[int, int]) -> None:
    """ValueError for a layout, subgraph or shard that :func:`compile_sketch` does not take."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    if isinstance(subgraph, str) and subgraph != "auto":
        raise ValueError(f"subgraph must be a number of entities, 'auto' or None, not {subgraph!r}")
    if isinstance(subgraph, int) and subgraph < MIN_ENTITIES:
        raise ValueError(f"subgraph must be at least {MIN_ENTITIES} entities, not {subgraph}")
    rank, size = shard
    if not 0 <= rank < size:
        raise ValueError(f"shard {rank} of {size} does not exist")
    if isinstance(subgraph, int) and size > 1:
        raise ValueError("a program trained on a subgraph is not sharded")
