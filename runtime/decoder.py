"""Recurrent message-passing erasure decoders on a Tanner graph (paper section 4).

A message is two fuzzy flags, ('is 1', 'is 0'); an erased bit says neither. Each iteration runs a
variable-node function B on every edge (the channel message and the extrinsic check-to-variable
messages), then a check-node function F on every edge (the extrinsic variable-to-check messages).
A bit's estimate is B on each of its edges, OR-ed per variable. F and B are shared by every edge and
every iteration. With the exact Boolean rules (F: every input said, then the parity of the ones;
B: OR of the ones, OR of the zeros) the decoder is belief propagation (peeling) on the erasure
channel; with NLN layers or MLPs it is learned. A learned NLN decoder is run crisp (memberships 0 or
1, :meth:`ErasureDecoder.crisp`): that is the decoder its printed formulas describe.

Nodes of degree below the function's width read padding messages that change nothing in the exact
rules: a known 0 at a check, silence at a variable.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from nlndl.runtime.formula import Formula, read_formula
from nlndl.runtime.init import Init
from nlndl.runtime.layers import Disjunction, MembershipLayer, Xor, xor_formula
from nlndl.runtime.message_passing import aggregate, gather
from nlndl.runtime.mlp import MLP
from nlndl.runtime.networks import NormalForm

DECODERS = ("nln", "mlp", "bp")
MEMBERSHIP_INIT = Init("normal")  # zero-mean normal: the paper's default for moderate fan-in
XOR_INIT = Init("normal", std=0.1)  # near-symmetric, as the parity experiment needs
VARIABLE_INIT = Init("negative", k=1)  # about one input per neuron selected at the start
CRISP_LOGIT = 30.0  # sigmoid(30) is 1 and sigmoid(-30) 1e-13 in float32


@dataclass(frozen=True)
class TannerIndex:
    """Padded gather indices of a Tanner graph; index ``edges`` is the padding message."""

    n: int
    edges: int
    edge_var: torch.Tensor  # (E,) variable of each edge
    check_in: torch.Tensor  # (E, dc - 1) other edges at the edge's check
    var_in: torch.Tensor  # (E, dv - 1) other edges at the edge's variable
    readout_in: torch.Tensor  # (R, dv - 1) check-message sets whose B outputs are OR-ed into a bit estimate
    readout_var: torch.Tensor  # (R,) the variable of each readout set

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n: int, dv: int, dc: int) -> TannerIndex:
        """Build from :class:`nlndl.compiler.tanner.TannerGraph` arrays for functions of degrees (dv, dc)."""
        edges = int(arrays["edge_var"].size)
        var_sorted = arrays["var_order"]  # edge ids grouped by variable
        var_ptr = arrays["var_ptr"]
        max_dv = int(np.diff(var_ptr).max(initial=0))
        max_dc = int(np.diff(arrays["check_ptr"]).max(initial=0))
        if max_dv > dv or max_dc > dc:
            raise ValueError(
                f"the code has variable degree up to {max_dv} and check degree up to {max_dc}; "
                f"the decoder's functions take at most ({dv}, {dc})"
            )
        edge_var = torch.as_tensor(arrays["edge_var"], dtype=torch.long)
        var_in = _padded(arrays["var_extrinsic"], arrays["var_extrinsic_ptr"], dv - 1, edges)
        var_edges = _padded(var_sorted, var_ptr, dv, edges)
        # a bit's estimate reads every extrinsic set of its edges and, where the variable has fewer than dv
        # edges, also the set of all its edges (which fits in dv - 1 slots): so every check reaches it
        low = torch.as_tensor(np.flatnonzero(np.diff(var_ptr) < dv), dtype=torch.long)
        return cls(
            n=n,
            edges=edges,
            edge_var=edge_var,
            check_in=_padded(arrays["check_extrinsic"], arrays["check_extrinsic_ptr"], dc - 1, edges),
            var_in=var_in,
            readout_in=torch.cat([var_in, var_edges[low, : dv - 1]]),
            readout_var=torch.cat([edge_var, low]),
        )

    def to(self, device: torch.device | str) -> TannerIndex:
        moved = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in self.__dict__.items()}
        return TannerIndex(**moved)


def _padded(flat: np.ndarray, ptr: np.ndarray, width: int, pad: int) -> torch.Tensor:
    """CSR lists -> dense (rows, width) index, short rows filled with ``pad``."""
    rows = ptr.size - 1
    out = np.full((rows, max(width, 0)), pad, dtype=np.int64)
    counts = np.diff(ptr)
    row_of = np.repeat(np.arange(rows), counts)
    col_of = np.arange(flat.size) - np.repeat(ptr[:-1], counts)
    out[row_of, col_of] = flat
    return torch.as_tensor(out)


def message_names(prefix: str, count: int, channel: bool) -> list[str]:
    """Input names of a node function: 'is 1' flags first, then 'is 0' (``one_ch, one_c1, .., zero_ch, ..``)."""
    sources = (["ch"] if channel else []) + [f"{prefix}{i}" for i in range(1, count + 1)]
    return [f"one_{s}" for s in sources] + [f"zero_{s}" for s in sources]


class ExactCheck(nn.Module):
    """BP's check rule on the BEC: said only when every input is said; then the parity of the ones."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        one, zero = x.chunk(2, dim=-1)
        every = (one + zero).clamp(max=1.0).prod(-1)
        odd = one.sum(-1).remainder(2.0)
        return torch.stack([every * odd, every * (1.0 - odd)], dim=-1)


class ExactVariable(nn.Module):
    """BP's variable rule on the BEC: a bit is 1 (0) when any input says 1 (0)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        one, zero = x.chunk(2, dim=-1)
        return torch.stack([one.amax(-1), zero.amax(-1)], dim=-1)


def with_known(x: torch.Tensor) -> torch.Tensor:
    """(..., 2d) flags ('is 1' ..., 'is 0' ...) -> (..., 3d): the 'known' flags (is 1 or is 0) appended.

    The known flag is the BEC message's natural third reading; with it, "every input known" is one
    conjunction and "some input says 1" one disjunction, instead of terms that pair two flags.
    """
    one, zero = x.chunk(2, dim=-1)
    return torch.cat([x, (one + zero).clamp(max=1.0)], dim=-1)


def known_names(names: list[str]) -> list[str]:
    """Names of :func:`with_known`'s output: the message names, then ``known_<source>`` per source."""
    return names + ["known_" + n.removeprefix("one_") for n in names[: len(names) // 2]]


class NLNCheck(nn.Module):
    """Check function from NLN layers: one = DNF(x) AND XOR(ones), zero = DNF(x) AND NOT XOR(ones).

    The DNF network (``terms`` conjunctions, then one disjunction) over the flags and known flags says
    whether the check can speak; the XOR neuron over the 'is 1' flags says which bit it speaks for.
    """

    def __init__(self, width: int, terms: int, c: float) -> None:
        super().__init__()
        self.width = width
        self.speaks = NormalForm(
            width * 3 // 2, terms, form="dnf", c=c, inner_init=MEMBERSHIP_INIT, outer_init=MEMBERSHIP_INIT
        )
        self.parity = Xor(width // 2, c=c, init=XOR_INIT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        speaks = self.speaks(with_known(x)).squeeze(-1)
        odd = self.parity(x[..., : self.width // 2])
        return torch.stack([speaks * odd, speaks * (1.0 - odd)], dim=-1)

    def formulas(self, names: list[str], threshold: float = 0.5) -> dict[str, Formula]:
        return {
            "speaks": self.speaks.formula(threshold, known_names(names)),
            "parity": xor_formula(self.parity, threshold, names[: self.width // 2]),
        }


class NLNVariable(nn.Module):
    """Variable function from NLN layers: 'is 1' and 'is 0', two disjunction neurons over the flags and known flags.

    Memberships start low (about one input selected per neuron): a neuron that starts by OR-ing many
    flags says 'is 1' and 'is 0' at once, the check messages it feeds are noise, and the checks fall silent.
    """

    def __init__(self, width: int, c: float) -> None:
        super().__init__()
        self.net = Disjunction(width * 3 // 2, 2, c=c, init=VARIABLE_INIT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(with_known(x))

    def formulas(self, names: list[str], threshold: float = 0.5) -> dict[str, Formula]:
        names = known_names(names)
        m = self.net.membership().detach().cpu().numpy()
        single = np.eye(len(names))  # each input its own one-literal term: a disjunction as a DNF
        return {
            key: read_formula("dnf", single, m[i], len(names), False, threshold, names)
            for i, key in enumerate(("one", "zero"))
        }


class MLPNode(nn.Module):
    """The same node interface with an MLP: width inputs -> hidden ReLU layer -> two sigmoid flags."""

    def __init__(self, width: int, hidden: Iterable[int]) -> None:
        super().__init__()
        self.net = MLP(width, list(hidden), outputs=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


@dataclass(frozen=True)
class DecoderShape:
    """Degrees the node functions are built for and how: decoder kind, NLN terms, MLP hidden size."""

    kind: str = "nln"
    dv: int = 3
    dc: int = 6
    terms: int = 0  # conjunctions of the NLN check's DNF; 0: 2 (dc - 1), one per incoming flag
    hidden: int = 200
    c: float = 1.0


class ErasureDecoder(nn.Module):
    """Recurrent decoder: check function F and variable function B, shared by every edge and iteration."""

    def __init__(self, shape: DecoderShape) -> None:
        super().__init__()
        if shape.kind not in DECODERS:
            raise ValueError(f"unknown decoder {shape.kind!r}; expected one of {', '.join(DECODERS)}")
        self.shape = shape
        widths = {"check": 2 * (shape.dc - 1), "variable": 2 * shape.dv}
        if shape.kind == "bp":
            self.check, self.variable = ExactCheck(), ExactVariable()
        elif shape.kind == "nln":
            self.check = NLNCheck(widths["check"], shape.terms or widths["check"], shape.c)
            self.variable = NLNVariable(widths["variable"], shape.c)
        else:
            self.check = MLPNode(widths["check"], [shape.hidden])
            self.variable = MLPNode(widths["variable"], [shape.hidden])

    def working_bytes(self, batch: int, index: TannerIndex) -> int:
        """Estimated peak bytes of one iteration on ``batch`` words (float32): three of its largest intermediate.

        The logic layers broadcast (batch, rows, neurons, inputs); an MLP holds (batch, rows, hidden); the
        gathered messages are (batch, rows, 2 dc). Three: the broadcast product, its complement and the
        allocator's cached block (an n = 480, batch 100,000 NLN decoder on an H200 held 62.6 GiB and asked
        for 53.6 more, with 46.3 reserved).
        """
        rows = max(index.edges, int(index.readout_in.shape[0]))
        layers = [m.in_features * m.out_features for m in self.modules() if isinstance(m, MembershipLayer)]
        per_row = max([2 * self.shape.dc, *layers, self.shape.hidden if self.shape.kind == "mlp" else 0])
        return 3 * 4 * batch * rows * per_row

    def crisp(self) -> ErasureDecoder:
        """A copy whose memberships are 0 or 1 (threshold 1/2): the decoder that the printed formulas describe.

        Memberships a little off 0 or 1 leak a little truth at every iteration, and a recurrent decoder run
        for many more iterations than it was trained with accumulates the leak; the crisp copy has none.
        BP and MLP decoders have no memberships: their copy is unchanged.
        """
        twin = copy.deepcopy(self)
        with torch.no_grad():
            for module in twin.modules():
                if isinstance(module, (MembershipLayer, Xor)):
                    on = module.membership() > 0.5
                    module.weight.copy_(torch.where(on, CRISP_LOGIT, -CRISP_LOGIT) / module.c)
        return twin

    def input_names(self) -> dict[str, list[str]]:
        s = self.shape
        return {
            "check": message_names("v", s.dc - 1, channel=False),
            "variable": message_names("c", s.dv - 1, channel=True),
        }

    def estimate(self, index: TannerIndex, channel: torch.Tensor, to_var: torch.Tensor) -> torch.Tensor:
        """Bit estimates (B, 2, n): the variable function B on each readout set of a variable, OR-ed per variable.

        The readout sets are the extrinsic sets of the variable's edges (plus all its edges when its degree
        is below dv), so every check reaches the estimate and B is both the message and the decision rule.
        """
        out = self._apply_variable(gather(channel, index.readout_var), to_var, index.readout_in)
        return torch.stack([aggregate(out[:, i], index.readout_var, index.n, "or") for i in (0, 1)], dim=1)

    def _apply_variable(self, own: torch.Tensor, to_var: torch.Tensor, incoming: torch.Tensor) -> torch.Tensor:
        """B on rows of (own channel message (B, 2, R), the check messages at ``incoming`` (R, d)) -> (B, 2, R)."""
        checks = gather(self._pad(to_var, known=False), incoming)
        return self.variable(self._inputs(torch.cat([own.unsqueeze(-1), checks], -1))).movedim(-1, 1)

    @staticmethod
    def _pad(messages: torch.Tensor, known: bool) -> torch.Tensor:
        """Append the padding message: (0, 0) says nothing; (0, 1) is a known 0, neutral for parity."""
        pad = messages.new_zeros(messages.shape[0], 2, 1)
        if known:
            pad[:, 1] = 1.0
        return torch.cat([messages, pad], -1)

    @staticmethod
    def _inputs(gathered: torch.Tensor) -> torch.Tensor:
        """(B, 2, rows, d) messages -> node-function input (B, rows, 2d): 'is 1' flags, then 'is 0' flags."""
        b, _, rows, d = gathered.shape
        return gathered.movedim(1, 2).reshape(b, rows, 2 * d)

    def forward(
        self,
        index: TannerIndex,
        channel: torch.Tensor,
        iterations: int,
        record: Iterable[int] | None = None,
        messages: list[torch.Tensor] | None = None,
    ) -> dict[int, torch.Tensor]:
        """Run ``iterations`` rounds from (B, 2, n) channel messages; return {t: (B, 2, n) estimates}.

        ``record`` lists the iteration counts whose estimates are returned (default: the last only); a
        ``messages`` list receives each round's (B, 2, E) variable-to-check and check-to-variable messages.
        """
        wanted = set(record) if record is not None else {iterations}
        channel_on_edges = gather(channel, index.edge_var)  # (B, 2, E)
        to_var = channel.new_zeros(channel.shape[0], 2, index.edges)  # check messages start silent
        out: dict[int, torch.Tensor] = {}
        for t in range(1, iterations + 1):
            to_check = self._apply_variable(channel_on_edges, to_var, index.var_in)
            to_var = self.check(self._inputs(gather(self._pad(to_check, known=True), index.check_in)))
            to_var = to_var.movedim(-1, 1)
            if messages is not None:
                messages += [to_check, to_var]
            if t in wanted:
                out[t] = self.estimate(index, channel, to_var)
        return out


def channel_messages(received: np.ndarray, erased: np.ndarray, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(B, n) channel output -> (B, 2, n) messages ('is 1', 'is 0'); an erased bit says neither."""
    known = torch.as_tensor(~np.asarray(erased, dtype=bool), dtype=dtype)
    bit = torch.as_tensor(np.asarray(received), dtype=dtype)
    return torch.stack([known * bit, known * (1.0 - bit)], dim=1)


def bit_probability(estimate: torch.Tensor) -> torch.Tensor:
    """P(bit = 1) from (B, 2, n) estimates: 1/2 moved up by the 'is 1' and down by the 'is 0' evidence."""
    return 0.5 + 0.5 * (estimate[:, 0] - estimate[:, 1])


def hard_decisions(estimate: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(values, still-erased) 0/1 arrays from (B, 2, n) estimates: decided when exactly one flag exceeds 1/2."""
    one = (estimate[:, 0] > 0.5).cpu().numpy()
    zero = (estimate[:, 1] > 0.5).cpu().numpy()
    return one.astype(np.uint8), one == zero
