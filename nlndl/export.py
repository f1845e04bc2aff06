"""Writing learned programs as Datalog that real engines run: Soufflé ``.dl`` and clingo ``.lp``.

Names that either engine would misread are mangled (:class:`nlndl.datalog.Names`), and the mapping is recorded
in a header comment. Facts go to separate files per world, so the rules file is the program.
"""

from __future__ import annotations

from pathlib import Path

from nlndl import __version__
from nlndl.compiler.crisp import Rule
from nlndl.compiler.ir import CompiledProgram, projection_of
from nlndl.datalog import Names, facts_lines, render
from nlndl.verify import checked_worlds


def used_relations(program: CompiledProgram, rules: list[Rule]) -> list[str]:
    """Relations the rules read or define, in declaration order."""
    used = {r.head for r in rules} | {a.predicate for r in rules for a in r.body} | set(program.learned)
    return [name for name in program.relations if name in used]


def souffle_text(program: CompiledProgram, rules: list[Rule], origin: str) -> str:
    names, symbols = Names.for_program(program), program.symbol_table
    lines = [f"// Learned by nlndl {__version__} from {origin} (sketch sha256 {program.sketch_hash[:16]}...)"]
    lines += names.header("//")
    relations = used_relations(program, rules)
    types = sorted({t for name in relations for t in program.relations[name]["types"]})
    lines += [f".type {t} <: {program.types[t]}" for t in types if t not in ("symbol", "number")]
    for name in relations:
        relation = program.relations[name]
        declared = relation.get("attributes") or [f"a{i}" for i in range(len(relation["types"]))]
        attrs = ", ".join(f"{a}: {t}" for a, t in zip(declared, relation["types"], strict=True))
        lines.append(f".decl {names(name)}({attrs})")
    lines += [f".input {names(n)}" for n in relations if n not in program.learned]
    lines += [f".output {names(n)}" for n in relations if n in program.learned]
    lines.append("")
    lines += [render(r, "!", names, symbols, anonymous=True) for r in rules]
    return "\n".join(lines) + "\n"


def clingo_text(program: CompiledProgram, rules: list[Rule], origin: str) -> str:
    names, symbols = Names.for_program(program), program.symbol_table
    lines = [f"% Learned by nlndl {__version__} from {origin} (sketch sha256 {program.sketch_hash[:16]}...)"]
    lines += names.header("%")
    lines.append("% facts: one <name>.<world>.facts.lp file per world")
    lines += [render(r, "not ", names, symbols, anonymous=True) for r in rules]
    for name in program.learned:
        lines.append(f"#show {names(name)}/{len(program.relations[name]['types'])}.")
    return "\n".join(lines) + "\n"


def planned_paths(stem: str, program: CompiledProgram) -> tuple[list[str], list[str]]:
    """The files and directories :func:`write_program` writes for ``program``, relative to its output directory."""
    names = Names.for_program(program)
    files, dirs = [f"{stem}.dl", f"{stem}.lp"], []
    for world in program.worlds:
        files.append(f"{stem}.{world.name}.facts.lp")
        dirs.append(f"{stem}.{world.name}.facts")
        files += [
            f"{stem}.{world.name}.facts/{names(name)}.facts"
            for name in world.layout
            if name not in program.learned and projection_of(name) is None
        ]
    return files, dirs


def write_program(out: Path, stem: str, program: CompiledProgram, rules: list[Rule], origin: str) -> list[Path]:
    """Write OUT/stem.dl, OUT/stem.lp and each world's facts (Soufflé directory and clingo file; the whole
    world's where training saw a subgraph) into ``out``, a fresh directory (the CLI stages them there and
    moves them into place; see nlndl.output.OutputDir)."""
    out.mkdir(parents=True, exist_ok=True)
    names = Names.for_program(program)
    symbols = program.symbol_table
    written = [out / f"{stem}.dl", out / f"{stem}.lp"]
    written[0].write_text(souffle_text(program, rules, origin))
    written[1].write_text(clingo_text(program, rules, origin))
    for world, (facts, *_) in zip(program.worlds, checked_worlds(program, whole=True), strict=True):
        (out / f"{stem}.{world.name}.facts.lp").write_text("\n".join(facts_lines(facts, symbols, names)) + "\n")
        directory = out / f"{stem}.{world.name}.facts"
        directory.mkdir(exist_ok=True)
        for name, rel in facts.items():
            if name in program.learned:
                continue
            rows = ["\t".join(str(symbols.value(c)) for c in fact) for fact in sorted(rel)]
            (directory / f"{names(name)}.facts").write_text("".join(r + "\n" for r in rows))
        written += [out / f"{stem}.{world.name}.facts.lp", directory]
    return written
