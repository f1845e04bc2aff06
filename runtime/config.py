"""How learned predicates are parameterised and chained (:class:`ChainConfig`), and how many restarts a
program trains at once."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from nlndl.compiler.ir import AMALGAMATIONS, CompiledProgram
from nlndl.defaults import CLASS_WEIGHTS, MIN_RESTARTS, RESTART_TIERS
from nlndl.runtime.init import Init
from nlndl.runtime.message_passing import AGGREGATIONS

FUZZY_FORMS = ("power", "product")


@dataclass
class ChainConfig:
    """How learned predicates are parameterised and chained."""

    restarts: int | None = None  # None: auto_restarts(program), 64 for small programs, 32, 16 for large
    c: float = 2.0  # membership scale: m = sigmoid(c * w)
    # conjunction weights N(-1, 1), the mean lowered on wide terms (over 17 inputs) to logit(2 / inputs) / c
    inner_init: Init = field(default_factory=lambda: Init("negative", k=2, mean=-1.0, std=2.0))
    outer_init: Init = field(default_factory=lambda: Init("normal", mean=-1.0, std=1.0))
    aggregation: str = "or"  # over substitutions of one head atom: product OR or max
    amalgamation: str | None = None  # new valuation vs old: None, each predicate's sketch option; replace, or, max
    safety: bool = True  # gate DNF terms that cannot read as safe clauses (see SafetyGate)
    fuzzy: str = "power"  # learned (fuzzy) inputs: "power" (1 - m)^(1 - x), or the paper's "product" 1 - m (1 - x)
    class_weight: str = CLASS_WEIGHTS[0]  # a positive example's weight in the loss relative to a negative's
    recompute: bool = False  # keep one valuation per step for the backward pass and run each step again there

    def __post_init__(self) -> None:
        if self.amalgamation is not None and self.amalgamation not in AMALGAMATIONS:
            raise ValueError(f"unknown amalgamation {self.amalgamation!r}")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation {self.aggregation!r}; expected one of {', '.join(AGGREGATIONS)}")
        if self.fuzzy not in FUZZY_FORMS:
            raise ValueError(f"unknown fuzzy form {self.fuzzy!r}; expected one of {', '.join(FUZZY_FORMS)}")
        if self.class_weight not in CLASS_WEIGHTS:
            raise ValueError(f"unknown class weight {self.class_weight!r}; expected one of {', '.join(CLASS_WEIGHTS)}")
        if self.restarts is not None and self.restarts < 1:
            raise ValueError("at least one restart is needed")

    def for_program(self, program: CompiledProgram) -> ChainConfig:
        """This config with the number of restarts decided: the one asked for, else :func:`auto_restarts`."""
        return self if self.restarts is not None else replace(self, restarts=auto_restarts(program))


def amalgamations(program: CompiledProgram, setting: str | None) -> dict[str, str]:
    """Per learned predicate, how a step's valuation merges with the one before: ``setting`` for all, or
    with None each predicate's sketch option (``.learn add(..., amalgamation=or)``; replace by default)."""
    return {p: setting or ir.amalgamation for p, ir in program.learned.items()}


def auto_restarts(program: CompiledProgram) -> int:
    """Restarts trained side by side when none are asked for: more independent draws where they are cheap."""
    work = program.summary()["index_entries"] * program.steps
    return next((k for limit, k in RESTART_TIERS if work <= limit), MIN_RESTARTS)
