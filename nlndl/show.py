"""Text dumps of a compiled program for ``nlndl compile --show depgraph|strata|ir``."""

from __future__ import annotations

from nlndl.compiler.ir import CompiledProgram, render_input, var_name


def show_depgraph(program: CompiledProgram) -> str:
    """One line per dependency edge, ``q -> p``; ``!`` marks a dependency through negation."""
    edges: dict[tuple[str, str], bool] = {}
    for src, dst, negative in program.dependencies:
        edges[(src, dst)] = edges.get((src, dst), False) or negative
    lines = [
        f"{'!' if negative else ''}{src} -> {dst}{' (learned)' if dst in program.learned else ''}"
        for (src, dst), negative in sorted(edges.items())
    ]
    return "\n".join(lines) if lines else "(no dependencies)"


def show_strata(program: CompiledProgram) -> str:
    lines = [f"stratum {i}: {' '.join(s)}" for i, s in enumerate(program.strata)]
    lines.append(f"recursive: {' '.join(program.recursive) or '(none)'}")
    return "\n".join(lines)


def show_ir(program: CompiledProgram, limit: int = 5) -> str:
    """Input lists, per-world counts and the first substitutions of each learned predicate."""
    symbols = program.symbol_table
    lines = [f"steps: {program.steps}"]
    for name, ir in program.learned.items():
        head = f"{name}({','.join(var_name(i) for i in range(ir.arity))})"
        lines.append(
            f"learned {head}: {ir.form} with {ir.terms} terms, variables "
            f"{', '.join(f'{var_name(i)}: {t}' for i, t in enumerate(ir.var_types))}"
            f"{', negation of ' + (', '.join(ir.negated) or 'no body predicate') if ir.negation else ''}"
            f"{', steps merged by ' + ir.amalgamation if ir.amalgamation != 'replace' else ''}"
        )
        left_out = f"; {ir.repeats_left_out:,} that repeat a variable left out" if ir.repeats_left_out else ""
        lines.append(f"  inputs ({len(ir.inputs)}{left_out}): {' '.join(render_input(a) for a in ir.inputs)}")
        for world in program.worlds:
            gather, scatter = world.gather(name), world.scatter(name)
            entry = world.layout[name]
            laid = (
                f"{entry.size:,} of its {entry.grid:,} atoms laid out (sparse: demanded)"
                if entry.sparse
                else (f"all {entry.grid:,} atoms laid out (dense)")
            )
            lines.append(
                f"  world {world.name}: {world.substitutions[name]} substitutions kept, "
                f"{world.pruned[name]} pruned, {gather.size} index entries; {laid}"
            )
            for row in range(min(limit, scatter.size)):
                rel, args = world.decode_slot(int(scatter[row]))
                true_inputs = [
                    render_input(a) for a, s in zip(ir.inputs, gather[row], strict=True) if world.valuation[s] > 0
                ]
                head_atom = f"{rel}({','.join(symbols.render(c) for c in args)})"
                lines.append(f"    {head_atom} <- true inputs: {' '.join(true_inputs) or '(none)'}")
    return "\n".join(lines)
