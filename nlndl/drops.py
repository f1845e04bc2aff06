"""The finishing step of a restart's crisp program: clauses (and body atoms of kept clauses) switched off one
at a time while a drop lowers the examples the crisp reading gets wrong, every candidate drop one slot of a
batched crisp pass (the reference's membership cut where the loss barely rises)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from nlndl.runtime.chain import ForwardChainer
from nlndl.runtime.nln import Variants


@dataclass
class Drops:
    """What the finishing step switched off in one restart's crisp program, per learned predicate: whole
    clauses (DNF terms) and single body atoms (term, input column) of the clauses kept."""

    terms: dict[str, list[int]] = field(default_factory=dict)
    atoms: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


@torch.no_grad()
def drop_parts(
    model: ForwardChainer,
    restart: int,
    threshold: float,
    left: int,
    neutral: bool = False,
    negatives: bool = False,
    atoms: bool = False,
) -> tuple[Drops, int]:
    """Clauses of ``restart``'s crisp program to switch off, one at a time while a drop lowers the examples
    it misclassifies on the compiled substitutions (``left`` of them to begin with, as ``crisp_wrong``
    counted): the reference's finishing step (a membership cut where the loss barely rises), read crisply.
    With ``atoms``, a body atom of a kept clause is a candidate drop too: a clause that holds one atom too
    many misses positives in the crisp reading while the fuzzy one, an OR over many substitutions of a
    term at about 0.5, already fits them, so no gradient removes it. With ``neutral``, also drops that
    leave the count as it is; with ``negatives``, the count is of the negative examples derived only
    (``left`` too). Every candidate drop is one slot of a batched crisp pass. Returns the drops and the
    count left."""
    crisp = {p: f.memberships(threshold) for p, f in model.functions.items() if f.ir.form == "dnf"}
    keep = {p: (outer[restart] > 0).to(torch.float32) for p, (_, outer) in crisp.items()}
    body = {p: (inner[restart] > 0).to(torch.float32) for p, (inner, _) in crisp.items()}
    drops = Drops()
    rows = torch.tensor([restart], device=model.worlds[0].valuation.device)
    while left or neutral:
        options: list[tuple[str, int, int | None]] = []
        for p, k in keep.items():
            for t in torch.nonzero(k).flatten().tolist():
                options.append((p, t, None))
                if atoms:
                    options.extend((p, t, a) for a in torch.nonzero(body[p][t]).flatten().tolist())
        if not options:
            break
        terms = {p: k.expand(len(options), -1).clone() for p, k in keep.items()}
        inputs = {p: b.expand(len(options), -1, -1).clone() for p, b in body.items()} if atoms else {}
        for i, (p, t, a) in enumerate(options):
            if a is None:
                terms[p][i, t] = 0.0
            else:
                inputs[p][i, t, a] = 0.0
        variants = Variants(rows.expand(len(options)), terms, inputs)
        wrong = model.crisp_mistakes(threshold, variants)[1] if negatives else model.crisp_wrong(threshold, variants)
        best = int(torch.argmin(wrong))
        if wrong[best] > left or (wrong[best] == left and not neutral):
            break
        p, t, a = options[best]
        if a is None:
            keep[p][t] = 0.0
            drops.terms.setdefault(p, []).append(t)
        else:
            body[p][t, a] = 0.0
            drops.atoms.setdefault(p, []).append((t, a))
        left = int(wrong[best])
    return drops, left
