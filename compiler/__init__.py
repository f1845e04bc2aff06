"""nlndl compiler: program sketches and Tanner graphs to index arrays (numpy, never torch).

The pipeline reads straight through: parse -> check -> ground (facts, background closure) ->
lower (valuation layout, substitutions, index arrays). :func:`compile_sketch` runs all of it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from nlndl import __version__
from nlndl.compiler.check import check
from nlndl.compiler.diagnostics import CompileError, Diagnostics
from nlndl.compiler.ground import ground_worlds, lower
from nlndl.compiler.ir import CompiledProgram
from nlndl.compiler.parser import parse_file
from nlndl.compiler.steps import default_steps
from nlndl.compiler.subgraph import MIN_ENTITIES, whole_world
from nlndl.compiler.subgraph import subgraph as sample
from nlndl.compiler.symbols import SymbolTable
from nlndl.defaults import COMPILE_MEMORY_BYTES, LAYOUTS

DEFAULT_MEMORY_LIMIT = COMPILE_MEMORY_BYTES

__all__ = ["CompileError", "CompiledProgram", "compile_sketch", "default_steps"]


def compile_sketch(
    path: Path,
    fact_dir: Path | None = None,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    steps: int | None = None,
    background: tuple[Path, ...] = (),
    seed: int = 0,
    layout: str = "auto",
    subgraph: int | None = None,
    shard: tuple[int, int] = (0, 1),
) -> CompiledProgram:
    """Compile the sketch at ``path``, with the rules of each ``background`` program (for example one
    an earlier ``nlndl train`` wrote) added as background; raises CompileError carrying every diagnostic.
    ``seed`` draws sampled closed-world negatives and the subgraph; ``layout`` is the valuation's: dense,
    sparse or auto; ``subgraph``: train on that many constants of each world around drawn positive examples
    (compiler.subgraph), the whole worlds kept for verification; ``shard`` (rank, size): one of ``size``
    processes' share of the examples, with the atoms their substitutions read (a sharded training run)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    if subgraph is not None and subgraph < MIN_ENTITIES:
        raise ValueError(f"subgraph must be at least {MIN_ENTITIES} entities, not {subgraph}")
    rank, size = shard
    if not 0 <= rank < size:
        raise ValueError(f"shard {rank} of {size} does not exist")
    if subgraph is not None and size > 1:
        raise ValueError("a program trained on a subgraph is not sharded")
    sketch = parse_file(path, tuple(background), memory_limit)
    diags = Diagnostics(sources=dict(sketch.sources))
    checked = check(sketch, diags)
    symbols = SymbolTable()
    worlds = ground_worlds(checked, symbols, fact_dir, diags, memory_limit)
    if diags:
        raise CompileError(diags)
    whole = []
    if subgraph is not None:
        full = worlds
        worlds = [sample(checked, w, subgraph, np.random.default_rng([seed, i, 1])) for i, w in enumerate(full)]
        whole = [whole_world(checked, w, s) for w, s in zip(full, worlds, strict=True)]
    learned, lowered = lower(checked, worlds, diags, memory_limit, seed, layout, shard)
    if diags:
        raise CompileError(diags)
    if steps is None:
        steps = sketch.steps[0] if sketch.steps else default_steps(checked, (w.db for w in worlds))
    digest = hashlib.sha256()
    for name in sorted(diags.sources):
        digest.update(name.encode() + b"\0" + diags.sources[name].encode() + b"\0")
    inputs = {str(Path(n).resolve()): hashlib.sha256(t.encode()).hexdigest() for n, t in diags.sources.items()}
    strata = checked.strata
    return CompiledProgram(
        version=__version__,
        sketch_hash=digest.hexdigest(),
        steps=steps,
        symbols=symbols.to_json(),
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
        closed=sorted({name for name, _ in sketch.closed}),
        whole=whole,
        noise=sketch.noise[0] if sketch.noise else None,
        warnings=diags.render_warnings(),
        inputs=dict(sorted(inputs.items())),
    )
