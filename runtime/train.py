"""The training loop for a forward chainer: Adam with a step schedule, binarisation, NaN recovery,
limits, checkpoints. It knows nothing about logic: a ``check`` callback decides when a restart is done.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load, save

from nlndl.defaults import MAX_ITERS
from nlndl.errors import NlndlError
from nlndl.runtime.adam import Adam
from nlndl.runtime.chain import ForwardChainer, TimeLimitReached


@dataclass
class TrainConfig:
    """Optimisation settings (the model's own settings are in ChainConfig)."""

    seed: int = 0
    max_iters: int = MAX_ITERS
    time_limit: float | None = None  # seconds
    lr: float = 0.05
    lr_late: float = 0.03  # after ``lr_switch`` iterations (the reference's two-step schedule)
    lr_switch: int = 1000
    check_every: int = 20
    # between the first checks, every this many iterations a cheaper look (the ``peek`` of :meth:`Trainer.fit`):
    # a run ends at the first of them where some restart's crisp program is right, not at the next check; past
    # ``peek_until`` iterations a peek would save a smaller share of the run than it costs (a crisp pass, about
    # a third of a step), so only checks look
    peek_every: int = 5
    peek_until: int = 200
    binarize_factor: float = 1.2  # applied at each check to restarts that classify every example right
    weight_limit: float = 20.0
    patience: int = 400  # a restart that has not improved (see replace_stalled) for this long starts anew
    renew_terms: bool = True  # a stalled restart first re-draws only some of its terms (see replace_stalled)
    renew_sound: bool = True  # ... and again, however often, while its clauses derive no negative example
    # a restart stalled with such clauses weighs its classes balanced until drawn anew (nlndl.learn: not under a
    # noise allowance)
    balance_sound: bool = True
    balanced_renewals: int = 2  # ... renewed while sound at most this often since its last new best, then drawn anew


@dataclass
class TrainState:
    iteration: int = 0
    seconds: float = 0.0
    best_loss: float = float("inf")
    resets: int = 0  # restarts re-initialised after NaN/inf
    replaced: int = 0  # restarts re-initialised after a plateau
    renewed: int = 0  # stalled restarts with some terms re-drawn and the others kept
    balanced: int = 0  # stalled restarts whose clauses derived no negative, weighed balanced until drawn anew
    spent_balanced: int = 0  # balanced restarts drawn anew after their last sound renewal (balanced_renewals)


CheckFn = Callable[[ForwardChainer, torch.Tensor], int | None]
# per learned predicate, the terms (len(restarts), T) of the given restarts that do more harm than good
HarmfulFn = Callable[[ForwardChainer, torch.Tensor], dict[str, torch.Tensor]]
# per given restart, whether its (crisp) clauses derive no negative example
SoundFn = Callable[[ForwardChainer, torch.Tensor], torch.Tensor]
ProgressFn = Callable[[TrainState, torch.Tensor], None]
PeekFn = CheckFn  # a winning restart found between checks, or None (see Trainer.fit)
RESTART_STATE = (
    "restart_best",
    "restart_since",
    "restart_wrong",
    "restart_renewed",
    "restart_balanced",
    "restart_sound_renewals",
)


class CheckpointError(NlndlError):
    """A checkpoint that cannot be resumed from: missing, damaged, or saved for another program."""


class Converged(Exception):
    """Raised by a check to end training with no winner: more iterations would find nothing new."""


def read_checkpoint(path: Path) -> tuple[dict[str, torch.Tensor], TrainState]:
    """The tensors and training state of a checkpoint directory; CheckpointError when they cannot be read."""
    try:
        tensors = load((path / "checkpoint.safetensors").read_bytes())
        meta = json.loads((path / "checkpoint.json").read_text())
        state = TrainState(**meta["state"])
    except FileNotFoundError as exc:
        raise CheckpointError(f"{exc.filename} is missing") from None
    except OSError as exc:
        raise CheckpointError(f"cannot read it: {exc.strerror}") from None
    except SafetensorError as exc:
        raise CheckpointError(f"checkpoint.safetensors is damaged ({exc})") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"checkpoint.json is damaged ({type(exc).__name__}: {exc})") from None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in asdict(state).values()):
        raise CheckpointError("checkpoint.json has values of the wrong type")
    return tensors, state


class Trainer:
    """Runs Adam on all restarts at once; stops when ``check`` returns a winning restart index."""

    def __init__(self, model: ForwardChainer, config: TrainConfig) -> None:
        self.model, self.config = model, config
        self.optimizer = Adam(model.parameters(), lr=config.lr, betas=(0.9, 0.999), eps=1e-6)
        self.state = TrainState()
        self.generator = torch.Generator().manual_seed(config.seed)
        k = model.restarts
        self.restart_best = torch.full((k,), float("inf"))
        self.restart_wrong = torch.full((k,), float("inf"))
        self.restart_since = torch.zeros(k, dtype=torch.long)  # iteration of the last real improvement
        self.restart_renewed = torch.zeros(k, dtype=torch.bool)  # some terms re-drawn since the last full draw
        self.restart_balanced = torch.zeros(k, dtype=torch.bool)  # weighed balanced since a sound stall
        self.restart_sound_renewals = torch.zeros(k, dtype=torch.long)  # sound stalls since weighed balanced
        self.harmful: HarmfulFn | None = None
        self.sound: SoundFn | None = None

    def learning_rate(self) -> float:
        return self.config.lr if self.state.iteration < self.config.lr_switch else self.config.lr_late

    def reset_restarts(self, bad: torch.Tensor) -> None:
        """Re-initialise restarts whose loss went NaN/inf, and forget their Adam moments."""
        self.reinitialise(bad)
        self.state.resets += int(bad.numel())

    def reinitialise(self, bad: torch.Tensor) -> None:
        """Draw the given restarts anew, every term, and forget what the plateau test knew of them."""
        self.redraw(
            bad, {p: torch.ones(len(bad), f.ir.terms, dtype=torch.bool) for p, f in self.model.functions.items()}
        )
        self.restart_best[bad] = float("inf")
        self.restart_wrong[bad] = float("inf")
        self.restart_since[bad] = self.state.iteration
        self.restart_renewed[bad] = False
        self.restart_balanced[bad] = False
        self.restart_sound_renewals[bad] = 0

    def renewable_terms(self, restarts: torch.Tensor) -> dict[str, torch.Tensor]:
        """Per learned predicate, the terms (len(restarts), T) to re-draw: those the disjunction does not take
        in, and those the ``harmful`` callback names."""
        unused = {p: (f.outer[restarts] <= 0.0).cpu() for p, f in self.model.functions.items()}
        if self.harmful is not None:
            for p, flags in self.harmful(self.model, restarts).items():
                unused[p] |= flags
        return unused

    def redraw(self, restarts: torch.Tensor, terms: dict[str, torch.Tensor]) -> None:
        """Re-draw the flagged terms (per predicate, (len(restarts), T)) of the given restarts and forget their
        Adam moments; the other terms stay as they are."""
        for p, function in self.model.functions.items():
            flags = terms[p]
            function.reset_terms(restarts, flags, self.generator)
            for param in (function.inner, function.outer):
                state = self.optimizer.state.get(param)
                if state:
                    for key in ("exp_avg", "exp_avg_sq"):
                        moments = state[key][restarts]
                        moments[flags.to(moments.device)] = 0
                        state[key][restarts] = moments

    def renew(self, restarts: torch.Tensor, terms: dict[str, torch.Tensor]) -> None:
        """Re-draw the flagged terms of the given stalled restarts, keep the others, and give them a new
        patience; once per full draw."""
        self.redraw(restarts, terms)
        self.restart_since[restarts] = self.state.iteration
        self.restart_renewed[restarts] = True

    def replace_stalled(self, losses: torch.Tensor, fitted: torch.Tensor) -> None:
        """Start anew every restart stuck on a plateau that still misclassifies an example. With ``renew_terms``,
        a restart first gets only its renewable terms re-drawn (:meth:`renewable_terms`), once per full draw,
        where it keeps some: the clauses that help stay, and fresh terms look for the examples still wrong.
        With ``renew_sound``, a restart whose clauses derive no negative example (``sound``) is renewed again
        at each stall: clauses that only derive true atoms belong to some complete program (a DNF only adds
        what its clauses derive), so only the missing clauses are sought, not the ones it has. With ``balance_sound``,
        such a restart weighs its classes balanced (N / P per positive) from its first such stall until it is
        drawn anew: the positives it misses weigh more against the negatives that a partial clause for them
        also derives (the default sqrt(N / P) keeps a sound program that misses a recursion's deeper cases:
        Cons/Member). A balanced restart is renewed while sound at most ``balanced_renewals`` times (the stall
        that balances it counts) since it last misclassified fewer examples than ever before, then drawn anew:
        sound partial programs that stall again and again would otherwise take every slot (List/Length seed 5:
        13 of 16 restarts stuck missing 5 of 8 positives), while one that still gains keeps its clauses."""
        losses = torch.nan_to_num(losses.cpu(), nan=float("inf"))
        # progress: fewer misclassified examples, or a loss at least 5% below the best so far (a loss that
        # only creeps down while the same examples stay wrong is a plateau)
        gained = self.wrong < self.restart_wrong
        improved = gained | (losses < self.restart_best * 0.95)
        self.restart_best = torch.where(improved, torch.minimum(self.restart_best, losses), self.restart_best)
        self.restart_sound_renewals[gained] = 0  # a new best: its renewals count afresh
        self.restart_wrong = torch.minimum(self.restart_wrong, self.wrong)
        self.restart_since[improved] = self.state.iteration
        stalled = (self.state.iteration - self.restart_since > self.config.patience) & ~fitted
        if not stalled.any():
            return
        restarts = torch.nonzero(stalled).flatten()
        cfg = self.config
        spent = self.restart_renewed[restarts]  # renewed since their last full draw: drawn anew, unless sound
        sound = None  # one crisp pass, only where a setting reads it
        if self.sound is not None and (cfg.balance_sound or (cfg.renew_sound and spent.any())):
            sound = self.sound(self.model, restarts).cpu()
        if cfg.balance_sound and sound is not None:
            newly = restarts[sound & ~self.restart_balanced[restarts]]
            self.restart_balanced[newly] = True
            self.restart_best[newly] = float("inf")  # its loss is on another scale from now on
            self.state.balanced += int(newly.numel())
        if cfg.renew_sound and sound is not None:
            if cfg.balance_sound:  # every sound restart is balanced by now
                self.restart_sound_renewals[restarts[sound]] += 1
                worn = self.restart_sound_renewals[restarts] > cfg.balanced_renewals
                self.state.spent_balanced += int((sound & worn).sum())
                sound = sound & ~worn
            spent &= ~sound
        fresh = restarts[~spent]
        if cfg.renew_terms and fresh.numel():
            renewable = self.renewable_terms(fresh)
            some = torch.stack([u.any(-1) for u in renewable.values()]).any(0)
            kept = torch.stack([(~u).any(-1) for u in renewable.values()]).any(0)
            chosen = some & kept
            if chosen.any():
                self.renew(fresh[chosen], {p: u[chosen] for p, u in renewable.items()})
                self.state.renewed += int(chosen.sum())
                restarts = restarts[~torch.isin(restarts, fresh[chosen])]
        if restarts.numel():
            self.reinitialise(restarts)
            self.state.replaced += int(restarts.numel())

    @torch.no_grad()
    def binarize(self, restarts: torch.Tensor) -> None:
        for function in self.model.functions.values():
            for param in (function.inner, function.outer):
                param[restarts] = (param[restarts] * self.config.binarize_factor).clamp(
                    -self.config.weight_limit, self.config.weight_limit
                )

    def step(self) -> torch.Tensor:
        """One Adam step on every restart; returns the per-restart losses before the step. With several
        processes, each back-propagates its share of the loss and one exchange gives every process the
        whole's losses, counts, largest errors and gradient (runtime.collective)."""
        self.optimizer.lr = self.learning_rate()
        self.model.balanced = self.restart_balanced
        share, worst, wrong = self.model.objective()
        self.optimizer.zero_grad()
        share[torch.isfinite(share)].sum().backward()
        losses, self.max_error, wrong = self.model.collective.step(share.detach(), worst, wrong, self.optimizer.params)
        self.wrong = wrong.cpu()
        finite = torch.isfinite(losses)
        if not finite.all():  # drawn anew, and no step on what their NaN left in the gradient
            bad = torch.nonzero(~finite).flatten()
            for param in self.optimizer.params:
                if param.grad is not None:
                    param.grad[bad.to(param.grad.device)] = 0
            self.reset_restarts(bad)
        self.optimizer.step()
        self.state.iteration += 1
        self.max_error = self.max_error.detach().cpu()
        return losses.cpu()

    def fit(
        self,
        check: CheckFn,
        progress: ProgressFn | None = None,
        harmful: HarmfulFn | None = None,
        sound: SoundFn | None = None,
        peek: PeekFn | None = None,
    ) -> int | None:
        """Train until ``check`` names a winning restart or a limit is reached; returns the winner. ``harmful``
        names terms that a stalled restart re-draws besides its unused ones; ``sound``, the restarts renewed
        again (see :meth:`replace_stalled`); ``peek``, called every ``peek_every`` iterations between the checks
        of the first ``peek_until``, may name a winner too, and changes nothing else."""
        cfg = self.config
        self.harmful, self.sound = harmful, sound
        start = time.perf_counter() - self.state.seconds
        # a long forward pass (many steps, large programs) stops between steps at the time limit; with several
        # processes passes run whole (all must stop at the same one) and the leader's clock ends the run
        collective = self.model.collective
        alone = collective.size == 1
        self.model.deadline = None if cfg.time_limit is None or not alone else start + cfg.time_limit
        while self.state.iteration < cfg.max_iters:
            try:
                losses = self.step()
            except TimeLimitReached:
                self.state.seconds = time.perf_counter() - start
                break
            self.state.seconds = time.perf_counter() - start
            finite = losses[torch.isfinite(losses)]
            if finite.numel():
                self.state.best_loss = min(self.state.best_loss, float(finite.min()))
            if progress is not None:
                progress(self.state, losses)
            last = self.state.iteration >= cfg.max_iters or (
                cfg.time_limit is not None and self.state.seconds >= cfg.time_limit
            )
            if cfg.time_limit is not None and not alone:
                last = collective.decide_flag(last)
            if self.state.iteration % cfg.check_every == 0 or last:
                try:
                    winner = check(self.model, losses)
                except Converged:
                    break
                if winner is not None:
                    return winner
                # every example on the right side of 0.5: push memberships toward 0/1
                fitted = torch.isfinite(losses) & (self.max_error < 0.5)
                if fitted.any():
                    self.binarize(torch.nonzero(fitted).flatten())
                self.replace_stalled(losses, fitted)
            elif (
                peek is not None
                and self.state.iteration < cfg.peek_until
                and self.state.iteration % cfg.peek_every == 0
            ):
                winner = peek(self.model, losses)
                if winner is not None:
                    return winner
            if last:
                break
        return None

    # --- checkpoints: safetensors for tensors, JSON for the rest (no pickle) ---

    def save(self, path: Path) -> None:
        """Write ``path/checkpoint.safetensors`` and ``path/checkpoint.json``, each to a temporary name first."""
        path.mkdir(parents=True, exist_ok=True)
        tensors = {f"param/{k}": v.detach().cpu().contiguous() for k, v in self.model.named_parameters()}
        names = {id(p): k for k, p in self.model.named_parameters()}
        for param, state in self.optimizer.state.items():
            for key in ("exp_avg", "exp_avg_sq"):
                tensors[f"adam/{names[id(param)]}/{key}"] = state[key].detach().cpu().contiguous()
            tensors[f"adam/{names[id(param)]}/step"] = torch.as_tensor(state["step"]).reshape(1).float().cpu()
        tensors["generator"] = self.generator.get_state()
        for key in RESTART_STATE:
            tensors[key] = getattr(self, key).clone()
        meta = {"state": asdict(self.state), "config": asdict(self.config)}
        for name, data in (
            ("checkpoint.safetensors", save(tensors)),
            ("checkpoint.json", (json.dumps(meta, indent=1) + "\n").encode()),
        ):
            tmp = path / f".{name}.tmp"
            tmp.write_bytes(data)
            tmp.replace(path / name)

    def load(self, path: Path) -> None:
        """Continue from a checkpoint written by :meth:`save`; CheckpointError (and nothing changed on disk) when
        it is missing, damaged or from another program or restart count."""
        tensors, state = read_checkpoint(path)
        params = dict(self.model.named_parameters())
        expected = {f"param/{k}": tuple(p.shape) for k, p in params.items()}
        expected |= {key: tuple(getattr(self, key).shape) for key in RESTART_STATE}
        for key, param in params.items():
            for part in ("exp_avg", "exp_avg_sq"):
                expected[f"adam/{key}/{part}"] = tuple(param.shape)
            expected[f"adam/{key}/step"] = (1,)
        expected["generator"] = tuple(self.generator.get_state().shape)
        optional = {k for k in expected if k.startswith("adam/")}
        optional |= {"restart_renewed", "restart_balanced", "restart_sound_renewals"}
        missing = sorted(set(expected) - set(tensors) - optional)
        extra = sorted(set(tensors) - set(expected))
        if missing or extra:
            what = f"lacks {missing[:3]}" if missing else f"has tensors this program lacks: {extra[:3]}"
            raise CheckpointError(f"it {what}: the sketch changed since it was saved")
        for key, tensor in tensors.items():
            if tuple(tensor.shape) != expected[key]:
                raise CheckpointError(
                    f"{key} has shape {tuple(tensor.shape)}, this run's is {expected[key]}: "
                    "--restarts or the sketch changed since it was saved"
                )
        if tensors["generator"].dtype != torch.uint8:
            raise CheckpointError("the generator state has the wrong type")
        with torch.no_grad():
            for key, param in params.items():
                param.copy_(tensors[f"param/{key}"])
        for key, param in params.items():
            if f"adam/{key}/exp_avg" in tensors:
                device = param.device
                self.optimizer.state[param] = {
                    "step": tensors[f"adam/{key}/step"].reshape(()).to(device),
                    "exp_avg": tensors[f"adam/{key}/exp_avg"].to(device),
                    "exp_avg_sq": tensors[f"adam/{key}/exp_avg_sq"].to(device),
                }
        self.generator.set_state(tensors["generator"])
        for key in RESTART_STATE:
            if key in tensors:
                setattr(self, key, tensors[key].to(getattr(self, key).dtype).clone())
            else:  # absent from checkpoints written before renewal existed: nothing renewed or balanced yet
                setattr(self, key, torch.zeros_like(getattr(self, key)))
        self.state = state
