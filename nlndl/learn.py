"""Learning rules for a compiled program: train the forward chainer, extract, simplify, verify.

A restart counts as solved only when its extracted, simplified rules entail every positive example
and no negative one both in nlndl's crisp evaluator and in clingo.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from nlndl.compiler.crisp import Rule
from nlndl.compiler.ir import CompiledProgram
from nlndl.extract import extract, prune_clauses, render, simplify
from nlndl.runtime.chain import ChainConfig, ForwardChainer
from nlndl.runtime.train import TrainConfig, Trainer, TrainState
from nlndl.verify import Score, clingo_score, crisp_score

PRUNED_PER_CHECK = 2  # near-misses per check whose superfluous clauses are sought (each costs a few crisp runs)


@dataclass
class LearnConfig:
    train: TrainConfig = field(default_factory=TrainConfig)
    chain: ChainConfig = field(default_factory=ChainConfig)
    threshold: float = 0.5  # membership above which an atom or term is read as selected
    device: str = "cpu"


@dataclass
class LearnResult:
    solved: bool
    rules: list[Rule]
    score: Score
    iterations: int
    seconds: float
    restarts: int
    restart: int | None  # the winning restart
    resets: int = 0
    replaced: int = 0  # restarts re-drawn after a plateau

    def rule_texts(self) -> list[str]:
        return [render(r) for r in self.rules]

    def to_json(self) -> dict:
        return {
            "solved": self.solved,
            "seconds": round(self.seconds, 3),
            "iterations": self.iterations,
            "restarts": self.restarts,
            "winning_restart": self.restart,
            "rules": self.rule_texts(),
            "accuracy": self.score.to_json(),
            "nan_resets": self.resets,
            "replaced_restarts": self.replaced,
        }


def memberships(model: ForwardChainer, restart: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for name, function in model.functions.items():
        inner, outer = function.memberships()
        out[name] = (inner[restart].detach().cpu().numpy(), outer[restart].detach().cpu().numpy())
    return out


class Learner:
    """Keeps the best candidate seen; its ``check`` is the trainer's stopping rule."""

    def __init__(self, program: CompiledProgram, config: LearnConfig) -> None:
        self.program, self.config = program, config
        self.best: tuple[float, list[Rule], Score | None] | None = None  # score None: not yet evaluated
        self.tried: set[tuple[str, ...]] = set()  # rule sets already scored

    def candidate(self, model: ForwardChainer, restart: int) -> tuple[list[Rule], Score]:
        rules = extract(self.program, memberships(model, restart), self.config.threshold)
        return rules, crisp_score(self.program, rules)

    def check(self, model: ForwardChainer, losses: torch.Tensor) -> int | None:
        """A winning restart, if any. Restarts whose crisp program misclassifies an example on the compiled
        substitutions (one batched forward pass) are only remembered, by that count, except the
        ``PRUNED_PER_CHECK`` with the fewest, whose superfluous clauses are dropped (:func:`prune_clauses`);
        the others have their rules extracted, evaluated by the crisp evaluator, simplified and verified
        by clingo."""
        grid_wrong = model.crisp_wrong(self.config.threshold).cpu()
        examples = sum(int(w.example_slots.numel()) for w in model.worlds)
        order = torch.argsort(torch.nan_to_num(losses, nan=float("inf"))).tolist()
        near = sorted((r for r in order if grid_wrong[r] > 0), key=lambda r: float(grid_wrong[r]))
        for restart in order:
            if grid_wrong[restart] > 0 and restart not in near[:PRUNED_PER_CHECK]:
                accuracy = 1.0 - float(grid_wrong[restart]) / max(examples, 1)
                if self.best is None or accuracy > self.best[0]:
                    rules = extract(self.program, memberships(model, restart), self.config.threshold)
                    self.best = (accuracy, rules, None)
                continue
            rules = extract(self.program, memberships(model, restart), self.config.threshold)
            key = tuple(render(r) for r in rules)
            if key in self.tried:
                continue
            self.tried.add(key)
            if grid_wrong[restart] > 0:
                rules = prune_clauses(rules, self.errors)
            score = crisp_score(self.program, rules)
            if self.best is None or score.accuracy > self.best[0]:
                self.best = (score.accuracy, rules, score)
            if not score.solved:
                continue
            # simplify keeps only changes after which the crisp evaluator still solves every example
            simple = simplify(rules, lambda trial: crisp_score(self.program, trial).solved)
            verified = clingo_score(self.program, simple)
            if verified.solved:
                self.best = (1.0, simple, verified)
                return restart
        return None

    def errors(self, rules: list[Rule]) -> int:
        """Examples that ``rules`` misclassify in the crisp evaluator."""
        score = crisp_score(self.program, rules)
        return len(score.missed) + len(score.wrong)

    def best_rules(self, model: ForwardChainer) -> tuple[list[Rule], Score]:
        """The best candidate seen (restart 0's rules if none was checked), with its crisp score."""
        if self.best is None:
            return self.candidate(model, 0)
        _, rules, score = self.best
        return rules, score if score is not None else crisp_score(self.program, rules)


def learn(
    program: CompiledProgram,
    config: LearnConfig | None = None,
    progress: Callable[[TrainState, torch.Tensor], None] | None = None,
    resume: Path | None = None,
    checkpoint: Path | None = None,
) -> LearnResult:
    """Train ``program``'s learned predicates from ``config.train.seed``; Ctrl-C saves ``checkpoint``."""
    config = config or LearnConfig()
    torch.manual_seed(config.train.seed)
    model = ForwardChainer(program, config.chain).to(config.device)
    trainer = Trainer(model, config.train)
    if resume is not None:
        trainer.load(resume)
    learner = Learner(program, config)
    started = time.perf_counter()
    try:
        winner = trainer.fit(learner.check, progress)
    except KeyboardInterrupt:
        if checkpoint is not None:
            trainer.save(checkpoint)
        raise
    if checkpoint is not None and winner is None:
        trainer.save(checkpoint)
    rules, score = learner.best_rules(model)
    return LearnResult(
        solved=winner is not None,
        rules=rules,
        score=score,
        iterations=trainer.state.iteration,
        seconds=time.perf_counter() - started,
        restarts=model.restarts,
        restart=winner,
        resets=trainer.state.resets,
        replaced=trainer.state.replaced,
    )
