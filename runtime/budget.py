"""Memory estimates made before training, so that work that would not fit is refused with the figure up front."""

from __future__ import annotations

from dataclasses import replace

from nlndl.compiler.diagnostics import size_text
from nlndl.compiler.ir import CompiledProgram
from nlndl.errors import NlndlError
from nlndl.runtime.collective import Collective
from nlndl.runtime.config import ChainConfig

FLOAT = 4  # bytes per float32
FIXED = 64 * 1024**2  # the optimiser, the checks' crisp passes and the allocator's slack, beyond the tensors below


class BudgetError(NlndlError):
    """Training that would need more memory than allowed; the message has the estimate and what to change."""


def training_bytes(program: CompiledProgram, restarts: int, steps: int | None = None, recompute: bool = False) -> int:
    """Estimated peak memory of training, beyond the interpreter and torch: the weights with their gradients and
    Adam moments, and per forward-chaining step the gathered body atoms, the terms and a copy of every
    restart's run valuation (:meth:`WorldIR.run_slots`), all kept for the backward pass. With ``recompute``
    (ChainConfig.recompute) only the valuations are kept and one step's activations live at a time, twice over
    while it is run again. On the bundled tasks the measured peak over the baseline was 0.2 to 2.2 times this
    figure (the grid form and shared crisp rows save most on the largest)."""
    steps = program.steps if steps is None else steps
    weights = sum(ir.terms * (len(ir.inputs) + 1) for ir in program.learned.values()) * restarts * FLOAT * 4
    activations = valuations = 0
    for world in program.worlds:
        slots = len(world.run_slots(program.learned))
        for name, ir in program.learned.items():
            activations += restarts * world.substitutions[name] * (len(ir.inputs) + 2 * ir.terms) * FLOAT
            valuations += restarts * slots * FLOAT
    if recompute:
        return FIXED + weights + 2 * activations + 2 * valuations * steps
    return FIXED + weights + (activations + valuations) * steps


def fit_training(
    program: CompiledProgram,
    chain: ChainConfig,
    limit: int,
    restarts_given: bool,
    collective: Collective | None = None,
) -> ChainConfig:
    """The chain settings that train ``program`` within ``limit`` bytes: as they are if they fit, else with steps
    recomputed in the backward pass, else (restarts not given) with fewer restarts; BudgetError when nothing
    fits, with the estimates and what to change. With several processes (``collective``), ``program`` is this
    one's shard and each fits its own; BudgetError on every process where one shard fits nothing (the
    settings they then train with: :func:`agree`)."""
    collective = collective or Collective()
    try:
        fitted, failure = _fit(program, chain, limit, restarts_given), None
    except BudgetError as exc:
        fitted, failure = None, str(exc)
    failures = [(rank, f) for rank, f in enumerate(collective.everyone(failure)) if f]
    if failures:
        rank, message = failures[0]
        raise BudgetError(message if collective.size == 1 else f"process {rank}'s shard: {message}")
    return fitted


def agree(chain: ChainConfig, collective: Collective | None = None) -> ChainConfig:
    """The settings every process trains with: the fewest restarts any shard chose, and steps recomputed if
    any shard needs it (one process: ``chain`` itself)."""
    if collective is None or collective.size == 1:
        return chain
    every = collective.everyone(chain)
    return replace(chain, restarts=min(c.restarts for c in every), recompute=any(c.recompute for c in every))


def _fit(program: CompiledProgram, chain: ChainConfig, limit: int, restarts_given: bool) -> ChainConfig:
    """One process's :func:`fit_training`."""
    restarts = chain.restarts or 1
    if training_bytes(program, restarts) <= limit:
        return chain
    if training_bytes(program, restarts, recompute=True) <= limit:
        return replace(chain, recompute=True)
    # the estimate is linear in restarts; fewer restarts in the cheaper mode per restart (recomputing a
    # program of one step keeps its activations twice, and saves nothing)
    per_restart, recompute = min(
        (training_bytes(program, 1, recompute=True) - FIXED, True), (training_bytes(program, 1) - FIXED, False)
    )
    fits = min(restarts - 1, (limit - FIXED) // per_restart) if per_restart > 0 and limit > FIXED else 0
    if not restarts_given and fits >= 1:
        return replace(chain, restarts=fits, recompute=recompute)
    hint = f"use --restarts {fits}, " if fits >= 1 else ""
    raise BudgetError(
        f"training would need about {size_text(training_bytes(program, restarts))} ({restarts} restarts, "
        f"{program.steps} steps; {size_text(training_bytes(program, restarts, recompute=True))} with each step "
        f"recomputed in the backward pass), over the limit of {size_text(limit)}; {hint}reduce vars, terms or "
        "steps, or raise --memory-limit"
    )
