"""Learning rules for a compiled program: train the forward chainer, extract, simplify, verify.

A restart counts as solved only when its extracted, simplified rules entail every positive example
and no negative one both in nlndl's crisp evaluator and in clingo (trained on subgraphs: clingo on the
whole worlds too). With ``noise``, rules clingo finds wrong on at most that fraction of each class are
accepted instead, the shortest description winning, and the result says how far they are from a fit.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from nlndl.allowance import Allowance, cost, example_counts
from nlndl.bounded import Unfinished, bounded, resident
from nlndl.compiler.crisp import Rule
from nlndl.compiler.diagnostics import size_text
from nlndl.compiler.ir import CompiledProgram
from nlndl.datalog import render
from nlndl.defaults import NOISE_PATIENCE
from nlndl.drops import Drops, drop_parts
from nlndl.extract import extract, simplify
from nlndl.holdout import hold_out
from nlndl.runtime.budget import BudgetError, agree, fit_training
from nlndl.runtime.chain import ForwardChainer
from nlndl.runtime.collective import Collective
from nlndl.runtime.config import ChainConfig
from nlndl.runtime.train import Converged, TrainConfig, Trainer, TrainState
from nlndl.verify import (
    CheckedWorld,
    GroundAtom,
    RuleDerivations,
    Score,
    checked_worlds,
    clingo_score,
    merged_worlds,
    shard_examples,
    validation_score,
)

NOISE_CANDIDATES = 4  # with noise, new rule sets within the allowance scored per check (each simplified)
CHECK_SECONDS = 60.0  # a check on the whole worlds may always take this long, within the time limit (ceilings)
LATE_SECONDS = 10.0  # and this long past the time limit: the final report's check comes after it
PRUNED_PER_CHECK = 2  # near-misses per check whose superfluous clauses are sought (a batched crisp pass per drop)


@dataclass
class LearnConfig:
    train: TrainConfig = field(default_factory=TrainConfig)
    chain: ChainConfig = field(default_factory=ChainConfig)
    threshold: float = 0.5  # membership above which an atom or term is read as selected
    device: str = "cpu"
    memory_limit: int | None = None  # bytes: what fit() fits training into (a grown subgraph fitted again)
    noise: float | None = None  # accept a program wrong on at most this fraction of each class of examples
    noise_patience: int = NOISE_PATIENCE  # iterations: with noise, stop once the best accepted has not improved
    clauses: bool = False  # keep every distinct clause the restarts read as at each check (LearnResult.clauses)
    pool_patience: int | None = None  # with clauses: stop once the pool has not improved for this many iterations
    judge: Callable[[Rule], bool] | None = None  # whether a new clause improves the pool (None: any new clause does)
    validation: float | None = None  # hold out this fraction of each class of examples (seeded) and score on it
    # trained on subgraphs: the program grown from the counterexamples (per world, ground atoms) of rules that
    # fit the subgraph but not the whole worlds, or of the best rules where no better ones were found for
    # train.patience iterations (None: it cannot grow), trained on from the current weights
    # (compiler.Grounded.grow); None: not grown
    grow: Callable[[list[list[GroundAtom]]], CompiledProgram | None] | None = None


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
    renewed: int = 0  # restarts with some terms re-drawn after a plateau, the others kept
    balanced: int = 0  # restarts weighed balanced after a plateau with sound clauses (TrainConfig.balance_sound)
    spent_balanced: int = 0  # balanced restarts drawn anew after their last sound renewal (balanced_renewals)
    accepted: bool = False  # solved, or (with noise) clingo finds it wrong on at most the allowed examples
    noise: float | None = None
    clauses: list[Rule] = field(default_factory=list)  # with LearnConfig.clauses: every clause read out, in order
    validation: Score | None = None  # clingo's score on the held-out examples (LearnConfig.validation)
    losses: list[float | None] = field(default_factory=list)  # the lowest restart's loss at each check (None: NaN)
    grown: int = 0  # times the subgraph trained on was grown from counterexamples (LearnConfig.grow)
    trained_on: list[int] = field(default_factory=list)  # per world, the constants of the last subgraph

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
            "renewed_restarts": self.renewed,
            "balanced_restarts": self.balanced,
            "balanced_restarts_drawn_anew": self.spent_balanced,
            "accepted": self.accepted,
            "noise": self.noise,
            "validation": self.validation.to_json() if self.validation is not None else None,
            "losses_at_checks": self.losses,
            "subgraph_grown": self.grown,
            "subgraph_constants": self.trained_on,
        }


def all_memberships(model: ForwardChainer) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per learned predicate, every restart's inner (K, T, L) and outer (K, T) memberships, on the CPU."""
    out = {}
    for name, function in model.functions.items():
        inner, outer = function.memberships()
        out[name] = (inner.detach().cpu().numpy(), outer.detach().cpu().numpy())
    return out


def restart_memberships(
    weights: dict[str, tuple[np.ndarray, np.ndarray]], restart: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One restart's part of :func:`all_memberships`."""
    return {name: (inner[restart], outer[restart]) for name, (inner, outer) in weights.items()}


def memberships(model: ForwardChainer, restart: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One restart's memberships (fresh arrays: callers may switch some off)."""
    return restart_memberships(all_memberships(model), restart)


class Outgrown(Exception):  # noqa: N818 (not an error: the subgraph is to grow)
    """Raised by a check when rules fit the subgraph trained on but not the whole worlds, or when the best rules
    have not improved for ``train.patience`` iterations on it (a subgraph may cut the facts that derive some of
    its positive examples) and are wrong on the whole worlds (LearnConfig.grow); ``score`` is theirs on the
    whole worlds, its counterexamples what the subgraph grows from."""

    def __init__(self, score: Score) -> None:
        super().__init__()
        self.score = score


class Learner:
    """Keeps the best candidate seen; its ``check`` is the trainer's stopping rule. ``worlds`` are the worlds
    rules are scored on (verify.checked_worlds; with several processes, every shard's examples merged) and
    ``counts`` their positive (True) and negative (False) examples."""

    def __init__(
        self,
        program: CompiledProgram,
        config: LearnConfig,
        worlds: list[CheckedWorld] | None = None,
        counts: dict[bool, int] | None = None,
        started: float | None = None,
    ) -> None:
        self.program, self.config = program, config
        self.worlds = checked_worlds(program) if worlds is None else worlds
        self.derivations = RuleDerivations(program, self.worlds)  # crisp scores on these worlds
        self.best: tuple[float, list[Rule], Score | None] | None = None  # score None: not yet evaluated
        self.tried: set[tuple[str, ...]] = set()  # rule sets already scored
        self.counted: tuple[tuple[int, ...], tuple[torch.Tensor, torch.Tensor]] | None = None  # see mistakes
        self.wholes: dict[tuple[str, ...], Score] = {}  # see whole_score
        self.timed: dict[tuple[str, ...], float] = {}  # rule sets whose whole check ran out of time: its seconds
        self.accepted: tuple[int, list[Rule], Score] | None = None  # restart, rules, clingo score; see accept
        self.checks, self.improved = 0, 0  # checks so far, and the one at which ``accepted`` last improved
        self.every = config.train.check_every
        counts = example_counts(program) if counts is None else counts
        self.allowance = Allowance.of_counts(counts, config.noise or 0.0)
        self.examples = counts[True] + counts[False]
        self.clauses: dict[Rule, None] = {}  # with config.clauses, in the order first read
        self.grew = 0  # the check at which the clause pool last gained a clause
        self.losses: list[float | None] = []  # the lowest restart's loss at each check, on its own class weight
        self.growing = config.grow is not None  # see Outgrown
        self.best_restart = 0  # the restart ``best`` was read from
        self.bettered = 0  # the check at which the best rules' accuracy last rose (see Outgrown)
        self.started = time.perf_counter() if started is None else started  # what a whole check's ceiling reads
        self.deadline: float | None = None  # the trainer's time limit (perf_counter), read at each check

    def mistakes(self, model: ForwardChainer) -> tuple[torch.Tensor, torch.Tensor]:
        """Per restart (on the CPU), the positive examples its crisp program misses and the negative ones it
        derives; one batched crisp pass per state of the weights, since ``check``, ``sound`` and ``harmful``
        read the same programs between two steps (the key: the parameters' in-place version counters)."""
        key = tuple(param._version for param in model.parameters())
        if self.counted is None or self.counted[0] != key:
            missed, derived = model.crisp_mistakes(self.config.threshold)
            self.counted = (key, (missed.cpu(), derived.cpu()))
        return self.counted[1]

    def check(self, model: ForwardChainer, losses: torch.Tensor) -> int | None:
        """A winning restart, if any. Restarts whose crisp program misclassifies more examples than allowed
        (none; with ``noise`` that fraction) on the compiled substitutions (one batched forward pass) are only
        remembered, by that count, except the ``PRUNED_PER_CHECK`` with the fewest and the
        ``PRUNED_PER_CHECK`` with the lowest loss, whose superfluous clauses and body atoms are dropped
        (:func:`drop_parts`); the others, and those that dropping brings within the allowance, have their
        rules extracted, evaluated by the crisp evaluator, simplified and verified by clingo. With noise, a
        program clingo finds within the allowance (:class:`Allowance`) is accepted, the one with the shortest
        description kept (:func:`cost`); the run ends when it has not improved for ``noise_patience``
        iterations."""
        threshold = self.config.threshold
        self.checks += 1
        self.deadline = model.deadline
        finite = losses[torch.isfinite(losses)]
        self.losses.append(float(finite.min()) if finite.numel() else None)
        collective = model.collective
        missed, derived = self.mistakes(model)
        grid_wrong = missed + derived
        order = torch.argsort(torch.nan_to_num(losses, nan=float("inf"))).tolist()
        misses = [r for r in order if grid_wrong[r] > 0]  # by loss
        fewest = sorted(misses, key=lambda r: float(grid_wrong[r]))[:PRUNED_PER_CHECK]
        # every process runs the near-misses' crisp passes, each on its shard; the leader scores alone
        near = sorted(set(fewest) | set(misses[:PRUNED_PER_CHECK]))
        drops = {r: drop_parts(model, r, threshold, int(grid_wrong[r]), atoms=True) for r in near}
        missing = set(torch.nonzero((derived == 0) & (missed > 0)).flatten().tolist())
        winner = self.score(model, order, grid_wrong, drops, missing) if collective.leader else None
        return collective.decide(winner)

    def peek(self, model: ForwardChainer, losses: torch.Tensor) -> int | None:
        """Between checks: the first restart by loss whose crisp program gets every example right on the
        compiled substitutions (one batched crisp pass) and whose rules, simplified, clingo verifies, as a
        check would take it; None otherwise, the learner as it was. Only where a check takes the first such
        program: no noise allowance, no clause pool, no subgraph (a check's other work, and the trainer's at a
        check, wait for the check). With several processes, every one runs the crisp pass on its shard and the
        leader scores, as at a check."""
        if self.allowance.total or self.config.clauses or self.program.whole:
            return None
        missed, derived = self.mistakes(model)  # the totals over every process's shard
        right = set(torch.nonzero(missed + derived == 0).flatten().tolist())
        if not right:  # the same on every process: none goes on to decide
            return None
        winner = self.first_right(model, losses, right) if model.collective.leader else None
        return model.collective.decide(winner)

    def first_right(self, model: ForwardChainer, losses: torch.Tensor, right: set[int]) -> int | None:
        """The scoring half of :meth:`peek`, on the leader: of the ``right`` restarts by loss, the first whose
        simplified rules clingo verifies."""
        order = torch.argsort(torch.nan_to_num(losses, nan=float("inf"))).tolist()  # by loss, as check scores
        for restart in (r for r in order if r in right):
            rules = self.rules(model, restart)
            key = tuple(render(r) for r in rules)
            if key in self.tried or not self.derivations.score(rules).solved:
                continue
            simple = simplify(rules, lambda trial: self.derivations.score(trial).solved)
            verified = clingo_score(self.program, simple, worlds=self.worlds)
            if verified.solved:
                self.tried.add(key)
                self.best, self.best_restart = (1.0, simple, verified), restart
                return restart
        return None

    def score(
        self,
        model: ForwardChainer,
        order: list[int],
        grid_wrong: torch.Tensor,
        drops: dict[int, tuple[Drops, int]],
        missing: frozenset[int] | set[int] = frozenset(),
    ) -> int | None:
        """The scoring half of :meth:`check`, on the leader: ``order`` by loss, ``grid_wrong`` the crisp
        mistakes per restart, ``drops`` the near-misses' (:func:`drop_parts`), ``missing`` the restarts whose
        crisp programs only miss positive examples (:meth:`fits_whole`)."""
        threshold = self.config.threshold
        if self.config.clauses:  # every restart's clauses, from one read of the memberships
            weights = all_memberships(model)
            judge = self.config.judge
            for restart in range(model.restarts):
                one = restart_memberships(weights, restart)
                for clause in extract(self.program, one, threshold):
                    if clause not in self.clauses:
                        self.clauses[clause] = None
                        if judge is None or judge(clause):
                            self.grew = self.checks
        examples = self.examples
        allowed = self.allowance.total
        before = None if self.best is None else self.best[0]
        if allowed:  # the fewest mistakes first, and only a few new rule sets scored per check
            order = sorted(order, key=lambda r: float(grid_wrong[r]))
        scored = 0
        for restart in order:
            if allowed and scored >= NOISE_CANDIDATES:
                break
            dropped, wrong = drops.get(restart, (Drops(), int(grid_wrong[restart])))
            if wrong > self.allowance.worth_scoring:
                accuracy = 1.0 - wrong / max(examples, 1)
                if self.best is None or accuracy > self.best[0]:
                    self.best, self.best_restart = (accuracy, self.rules(model, restart, dropped), None), restart
                    if restart in missing and self.fits_whole():
                        return restart
                continue
            rules = self.rules(model, restart, dropped)
            key = tuple(render(r) for r in rules)
            if key in self.tried:
                continue
            self.tried.add(key)
            scored += 1
            score = self.derivations.score(rules)
            if self.best is None or score.accuracy > self.best[0]:
                self.best, self.best_restart = (score.accuracy, rules, score), restart
            if score.mistakes > self.allowance.worth_scoring:
                continue
            # simplify keeps only changes after which the crisp evaluator finds no more mistakes (with noise:
            # that cost no more than they save in description length, mistakes + literals)
            if allowed:
                simple = simplify(rules, lambda trial, base=score, rules=rules: self.no_worse(trial, base, rules))
            else:
                simple = simplify(rules, lambda trial: self.derivations.score(trial).solved)
            if allowed and not self.program.whole:  # clingo checks only a program this check would keep
                crisp = self.derivations.score(simple)  # the score clingo gives, from the crisp evaluator
                if not (self.allowance.admits(crisp) and self.beats(simple, crisp)):
                    continue
            verified = clingo_score(self.program, simple, worlds=self.worlds)
            allowance = self.allowance
            if verified.mistakes <= allowed and self.program.whole:  # trained on subgraphs: the whole worlds judge
                self.best, self.best_restart = (1.0 - verified.mistakes / max(examples, 1), simple, verified), restart
                verified = self.whole_score(simple)
                if verified.unchecked is not None:  # judged by no one: training goes on
                    continue
                allowance = Allowance.of_score(verified, self.config.noise)  # the whole worlds' share of each class
                if self.growing and not verified.solved and not (allowed and allowance.admits(verified)):
                    raise Outgrown(verified)
            if allowed:  # with noise a perfect fit is one more candidate: it may fit the mislabelled examples
                if allowance.admits(verified):
                    self.accept(restart, simple, verified)
            elif verified.solved:
                self.best, self.best_restart = (1.0, simple, verified), restart
                return restart
        if self.best is not None and (before is None or self.best[0] > before):
            self.bettered = self.checks
        stalled = self.checks - self.bettered >= self.config.train.patience / self.every
        if self.growing and self.accepted is None and self.best is not None and stalled:
            winner = self.outgrown()
            if winner is not None:
                return winner
        if self.accepted is not None and self.checks - self.improved >= self.config.noise_patience / self.every:
            return self.accepted[0]
        patience = self.config.pool_patience
        alone = model.collective.size == 1  # several processes decide together; the pool is read on the leader
        if self.config.clauses and alone and patience is not None and self.checks - self.grew >= patience / self.every:
            if self.accepted is not None:
                return self.accepted[0]
            raise Converged  # the pool has stopped growing: nothing new to read out
        return None

    def fits_whole(self) -> bool:
        """Trained on subgraphs without noise: whether the best rules, which miss positive examples of the
        subgraph but derive no negative one, hold on the whole worlds (the subgraph may lack the facts that
        derive those positives), simplified there as a winner is. Checked as the best improves, rather than
        only once training has stalled on the subgraph (:meth:`outgrown`)."""
        if not self.program.whole or self.allowance.total or self.best is None:
            return False
        return self.won_whole(self.best[1])

    def won_whole(self, rules: list[Rule]) -> bool:
        """Whether ``rules`` hold on the whole worlds; if so they are the best, simplified there."""
        if not self.whole_score(rules).solved:
            return False
        simple = simplify(rules, lambda trial: self.whole_score(trial).solved)
        self.best = (1.0, simple, self.whole_score(simple))
        return True

    def outgrown(self) -> int | None:
        """Training has stalled on a subgraph, with no rules accepted: the best rules' restart where they hold on
        the whole worlds (the subgraph lacked facts they need), simplified there as a winner is; with noise,
        accepted where the whole worlds' allowance admits them (the run goes on as after any acceptance);
        else :class:`Outgrown` with their counterexamples there."""
        assert self.best is not None
        self.bettered = self.checks  # once per stall
        rules = self.best[1]
        score = self.whole_score(rules)
        noise = self.config.noise
        if noise and Allowance.of_score(score, noise).admits(score):
            self.accept(self.best_restart, rules, score)
            return None
        if self.won_whole(rules):
            return self.best_restart
        if any(score.counterexamples):
            raise Outgrown(score)
        return None

    def no_worse(self, trial: list[Rule], base: Score, rules: list[Rule]) -> bool:
        """Whether simplifying ``rules`` (scored ``base``) to ``trial`` keeps, with noise, each class's mistakes
        within the allowance (or no worse than before where they were not) and the description no longer."""
        score = self.derivations.score(trial)
        return (
            score.false_negatives <= max(self.allowance.missed, base.false_negatives)
            and score.false_positives <= max(self.allowance.derived, base.false_positives)
            and cost(score, trial) <= cost(base, rules)
        )

    def beats(self, rules: list[Rule], score: Score) -> bool:
        """Whether ``rules``, scored ``score``, beat the best accepted program: a shorter description (mistakes +
        literals), then fewer mistakes."""
        best = self.accepted
        return best is None or (cost(score, rules), score.mistakes) < (cost(best[2], best[1]), best[2].mistakes)

    def accept(self, restart: int, rules: list[Rule], score: Score) -> None:
        """Keep ``rules`` if they beat the best accepted program."""
        if self.beats(rules, score):
            self.accepted, self.improved = (restart, rules, score), self.checks

    def harmful(self, model: ForwardChainer, restarts: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per learned predicate, the terms (len(restarts), T) of each restart's crisp program that a stalled
        restart re-draws: those that :func:`drop_parts` switches off when neutral drops count (without them it
        misclassifies no more examples), and those it drops to derive fewer negative examples."""
        threshold = self.config.threshold
        missed, derived = self.mistakes(model)
        grid_wrong = missed + derived
        flags = {p: torch.zeros(len(restarts), f.ir.terms, dtype=torch.bool) for p, f in model.functions.items()}
        for i, restart in enumerate(restarts.tolist()):
            dropped, _ = drop_parts(model, restart, threshold, int(grid_wrong[restart]), neutral=True)
            for p, terms in dropped.terms.items():
                flags[p][i, terms] = True
            dropped, _ = drop_parts(model, restart, threshold, int(derived[restart]), negatives=True)
            for p, terms in dropped.terms.items():
                flags[p][i, terms] = True
        return flags

    def sound(self, model: ForwardChainer, restarts: torch.Tensor) -> torch.Tensor:
        """Whether each given restart's crisp program derives no negative example (on the compiled
        substitutions): a stalled one is renewed again rather than drawn anew."""
        return self.mistakes(model)[1][restarts.cpu()] == 0

    def rules(self, model: ForwardChainer, restart: int, dropped: Drops | None = None) -> list[Rule]:
        """The rules read from ``restart``'s memberships, without the ``dropped`` clauses and body atoms."""
        weights = memberships(model, restart)
        dropped = dropped or Drops()
        for p, terms in dropped.terms.items():
            weights[p][1][terms] = 0.0
        for p, atoms in dropped.atoms.items():
            for t, a in atoms:
                weights[p][0][t, a] = 0.0
        return extract(self.program, weights, self.config.threshold)

    def best_rules(self, model: ForwardChainer) -> tuple[list[Rule], Score]:
        """The best candidate seen (restart 0's rules if none was checked) with its crisp score or, where
        training saw subgraphs, its clingo score on the whole worlds."""
        if self.accepted is not None:
            return self.accepted[1], self.accepted[2]
        rules, score = (self.rules(model, 0), None) if self.best is None else self.best[1:]
        if self.program.whole:
            return rules, self.whole_score(rules)
        return rules, score if score is not None else self.derivations.score(rules)

    def whole_score(self, rules: list[Rule]) -> Score:
        """``rules``' clingo score on the whole worlds of a program trained on subgraphs (each rule set once),
        computed within :meth:`ceilings`; past them a score that says so (``unchecked``), never solved: rules
        right on a subgraph can derive nearly every pair of a large world, whose grounding would hold the run
        past its time limit and past Ctrl-C. A check stopped by time is run again when asked once its
        allowance has doubled, so that right rules on a world whose check is long are verified at a later
        stall or at the end, at most about twice their check's time lost."""
        key = tuple(render(r) for r in rules)
        if key in self.wholes and key not in self.timed:  # checked, or stopped by memory: said once
            return self.wholes[key]
        seconds, memory = self.ceilings()
        if key not in self.wholes or seconds >= 2 * self.timed[key]:
            worlds = checked_worlds(self.program, whole=True)  # decoded here once, not in each check's process
            self.timed.pop(key, None)
            try:
                self.wholes[key] = bounded(lambda: clingo_score(self.program, rules, worlds=worlds), seconds, memory)
            except Unfinished as exc:
                if exc.timed:  # asked again once its allowance has doubled (training has gone on)
                    self.timed[key] = seconds
                allowed = f"as long as the training before it, at least {CHECK_SECONDS:.0f} s"
                if self.deadline is not None:
                    allowed += f", and {LATE_SECONDS:.0f} s at most past --time-limit"
                self.wholes[key] = Score(
                    unchecked=f"not checked on the whole world: clingo's check {exc} (a check may take {allowed}, "
                    "within the memory limit)"
                )
        return self.wholes[key]

    def ceilings(self) -> tuple[float, int | None]:
        """Seconds and bytes a check on the whole worlds may take: as long as training has taken so far, at least
        ``CHECK_SECONDS``, but no later than the time limit (``LATE_SECONDS`` past it: the final report's check
        comes after it); the memory limit less what this process holds (at least an eighth of it)."""
        now = time.perf_counter()
        seconds = max(CHECK_SECONDS, now - self.started)
        if self.deadline is not None:
            seconds = min(seconds, max(self.deadline - now, 0.0) + LATE_SECONDS)
        limit = self.config.memory_limit
        memory = None if limit is None else max(limit - resident(os.getpid()), limit // 8)
        return seconds, memory


def fit(
    program: CompiledProgram, config: LearnConfig, collective: Collective | None = None
) -> tuple[LearnConfig, list[str]]:
    """``config`` with its chain settled for ``program`` (restarts decided) and fitted into
    ``config.memory_limit``: steps recomputed in the backward pass, else fewer restarts where none were asked
    for; and what was changed, in words. BudgetError when nothing fits. The one place training is fitted to
    memory: :func:`learn` trains with the settings it is given."""
    chain = agree(config.chain.for_program(program), collective)
    if config.memory_limit is None:
        return replace(config, chain=chain), []
    given = config.chain.restarts is not None
    fitted = agree(fit_training(program, chain, config.memory_limit, given, collective), collective)
    changes = ["steps recomputed in the backward pass"] if fitted.recompute and not chain.recompute else []
    if fitted.restarts != chain.restarts:
        changes.append(f"{fitted.restarts} restarts instead of {chain.restarts}")
    notes = [f"training within {size_text(config.memory_limit)}: {', '.join(changes)}"] if changes else []
    return replace(config, chain=fitted), notes


def regrow(
    trainer: Trainer, config: LearnConfig, outgrown: Outgrown, collective: Collective
) -> tuple[CompiledProgram, Trainer] | str:
    """The grown program (LearnConfig.grow) and a trainer for it that continues from ``trainer``'s weights and
    state (the restarts kept; steps recomputed to fit the memory limit); why not, when it cannot grow or fit."""
    assert config.grow is not None
    program = config.grow(outgrown.score.counterexamples)
    if program is None:
        if all(w.sampled >= w.entities for w in trainer.model.program.whole):
            return "it holds every constant of the world already"
        return "the counterexamples' constants, paths and neighbours are all in it already"
    try:
        kept = replace(config.chain, restarts=trainer.model.restarts)
        config, _ = fit(program, replace(config, chain=kept), collective)
    except BudgetError:
        return f"grown, it would not fit the memory limit ({size_text(config.memory_limit)})"
    model = ForwardChainer(program, config.chain, collective).to(config.device)
    grown = Trainer(model, config.train)
    with tempfile.TemporaryDirectory(prefix="nlndl-grow-") as tmp:
        trainer.save(Path(tmp))
        grown.load(Path(tmp))
    return program, grown


def growth_text(before: CompiledProgram, after: CompiledProgram | str, score: Score) -> str:
    """A line on one growth step: the counterexamples that asked for it, and the constants and index entries
    trained on before and after (what an iteration's cost follows), or why the subgraph stays."""
    wrong = f"{score.false_negatives:,} missed positives, {score.false_positives:,} derived negatives"
    if isinstance(after, str):
        return f"the rules fail on the whole world ({wrong}); the subgraph stays as it is: {after}"
    sizes = ", ".join(
        f"{old.sampled:,} -> {new.sampled:,} of {new.entities:,} constants"
        + (f" of world {new.name}" if new.name != "main" else "")
        for old, new in zip(before.whole, after.whole, strict=True)
    )
    entries = f"{before.summary()['index_entries']:,} -> {after.summary()['index_entries']:,} index entries"
    return f"the rules fail on the whole world ({wrong}): subgraph grown, {sizes}, {entries}"


def reported(
    best: tuple[list[Rule], Score], before: tuple[list[Rule], Score] | None, accepted: bool
) -> tuple[list[Rule], Score]:
    """The rules a run reports: its best ones (the accepted ones where it was solved or accepted), or where it
    ends neither, ``before`` (of the rules whose counterexamples grew its subgraph, those with the fewest
    mistakes on the whole worlds) where they get more examples right there or the best could not be checked."""
    if accepted or before is None:
        return best
    if best[1].unchecked is not None or before[1].mistakes < best[1].mistakes:
        return before
    return best


def learn(
    program: CompiledProgram,
    config: LearnConfig | None = None,
    progress: Callable[[TrainState, torch.Tensor], None] | None = None,
    resume: Path | None = None,
    checkpoint: Path | Callable[[Trainer], None] | None = None,
    collective: Collective | None = None,
    notify: Callable[[str], None] | None = None,
) -> LearnResult:
    """Train ``program``'s learned predicates from ``config.train.seed``, with ``config`` as it is (fitted to
    a memory limit by :func:`fit`, restarts decided if none were given); Ctrl-C, and a run that ends unsolved,
    save ``checkpoint``: a directory, or a function given the trainer (the CLI's publishes it into its output
    directory). ``resume`` raises CheckpointError on a checkpoint that cannot be resumed from. ``notify`` is
    told, in a line, each time the subgraph trained on grows (or cannot).

    With a ``collective`` of several processes (runtime.collective), ``program`` is this process's shard of
    the examples (compile_sketch's ``shard``): every process trains every restart on its shard, the leader
    scores and verifies the rules on every shard's examples, saves the checkpoint, and every process
    returns the leader's result."""
    config = config or LearnConfig()
    collective = collective or Collective()
    if config.validation:
        if collective.size > 1:
            raise ValueError("validation examples are not held out of a program sharded among processes")
        program, _ = hold_out(program, config.validation, config.train.seed)
    config = replace(config, chain=config.chain.for_program(program))
    torch.manual_seed(config.train.seed)
    model = ForwardChainer(program, config.chain, collective).to(config.device)
    # under a noise allowance some missed positives are noise: a sound stalled restart keeps the class weight
    trainer = Trainer(model, config.train if config.noise is None else replace(config.train, balance_sound=False))
    if resume is not None:
        trainer.load(resume)
    worlds = checked_worlds(program)
    if collective.size > 1:
        worlds = merged_worlds(worlds, collective.everyone(shard_examples(worlds)))
    started = time.perf_counter()
    learner = Learner(program, config, worlds, model.example_counts, started)

    def save() -> None:
        if not collective.leader:
            return
        if callable(checkpoint):
            checkpoint(trainer)
        elif checkpoint is not None:
            trainer.save(checkpoint)

    grown = 0
    before: tuple[list[Rule], Score] | None = None  # the best rules that grew the subgraph, judged on the whole
    while True:
        try:
            winner = trainer.fit(learner.check, progress, learner.harmful, learner.sound, learner.peek)
            break
        except KeyboardInterrupt:
            save()
            raise
        except Outgrown as exc:
            assert learner.best is not None  # the rules whose counterexamples these are
            if before is None or exc.score.mistakes < before[1].mistakes:
                before = (learner.best[1], exc.score)
            regrown = regrow(trainer, config, exc, collective)
            if notify is not None:
                notify(growth_text(program, regrown if isinstance(regrown, str) else regrown[0], exc.score))
            if isinstance(regrown, str):  # it cannot grow: training goes on as on a fixed subgraph
                learner.growing = False
                continue
            program, trainer = regrown
            model = trainer.model
            learner = Learner(program, config, counts=model.example_counts, started=started)
            grown += 1
    if winner is None:
        save()
    result = None
    if collective.leader:
        best = learner.best_rules(model)
        solved = winner is not None and best[1].solved
        accepted = solved or learner.accepted is not None
        rules, score = reported(best, before, accepted)
        result = LearnResult(
            solved=solved,
            rules=rules,
            score=score,
            iterations=trainer.state.iteration,
            seconds=time.perf_counter() - started,
            restarts=model.restarts,
            restart=winner,
            resets=trainer.state.resets,
            replaced=trainer.state.replaced,
            renewed=trainer.state.renewed,
            balanced=trainer.state.balanced,
            spent_balanced=trainer.state.spent_balanced,
            accepted=accepted,
            noise=config.noise,
            clauses=list(learner.clauses),
            validation=validation_score(program, rules) if config.validation else None,
            losses=learner.losses,
            grown=grown,
            trained_on=[w.sampled for w in program.whole],
        )
    return collective.decide(result)
