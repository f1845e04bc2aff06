"""Memory estimates made before training, so that work that would not fit is refused with the figure up front."""

from __future__ import annotations

from nlndl.compiler.diagnostics import size_text
from nlndl.compiler.ir import CompiledProgram

FLOAT = 4  # bytes per float32
FIXED = 64 * 1024**2  # the optimiser, the checks' crisp passes and the allocator's slack, beyond the tensors below


class BudgetError(Exception):
    """Training that would need more memory than allowed; the message has the estimate and what to change."""


def training_bytes(program: CompiledProgram, restarts: int, steps: int | None = None) -> int:
    """Estimated peak memory of training, beyond the interpreter and torch: the weights with their gradients and
    Adam moments, and per forward-chaining step the gathered body atoms, the terms and a valuation copy of
    every restart, all kept for the backward pass. On the bundled tasks the measured peak over the baseline was
    0.2 to 2.2 times this figure (the grid form and shared crisp rows save most on the largest)."""
    steps = program.steps if steps is None else steps
    weights = sum(ir.terms * (len(ir.inputs) + 1) for ir in program.learned.values()) * restarts * FLOAT * 4
    per_step = 0
    for world in program.worlds:
        for name, ir in program.learned.items():
            per_step += restarts * world.substitutions[name] * (len(ir.inputs) + 2 * ir.terms) * FLOAT
            per_step += restarts * world.atoms * FLOAT
    return FIXED + weights + per_step * steps


def check_training_memory(program: CompiledProgram, restarts: int, limit: int, steps: int | None = None) -> int:
    """The estimate of :func:`training_bytes`; BudgetError when it is over ``limit``, naming the restarts
    that would fit."""
    need = training_bytes(program, restarts, steps)
    if need <= limit:
        return need
    per_restart = training_bytes(program, 1, steps) - FIXED  # the estimate is FIXED + restarts x per_restart
    fits = min(restarts - 1, (limit - FIXED) // per_restart) if per_restart > 0 and limit > FIXED else 0
    hint = f"use --restarts {fits}, " if fits else ""
    raise BudgetError(
        f"training would need about {size_text(need)} ({restarts} restarts, {steps or program.steps} steps), over "
        f"the limit of {size_text(limit)}; {hint}reduce vars, terms or steps, or raise --memory-limit"
    )
