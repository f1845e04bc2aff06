"""A tiny dense reference for forward chaining: one-hot einsums over *all* groundings.

Memory is O(substitutions x candidates x atoms): for tests on small programs only. The sparse runtime
(:mod:`nlndl.runtime.chain`) must agree with it, values and gradients, on programs compiled with
``prune=none``.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from nlndl.compiler.ir import CompiledProgram, WorldIR
from nlndl.runtime.chain import ForwardChainer
from nlndl.runtime.nln import nln_forward
from nlndl.runtime.scatter import product_or


def one_hots(program: CompiledProgram, world: WorldIR, predicate: str) -> tuple[torch.Tensor, torch.Tensor]:
    """G (S, L, A): which atom each candidate of each substitution reads; H (S, P): its head atom."""
    ir = program.learned[predicate]
    domains = [world.domains[t] for t in ir.var_types]
    subs = list(itertools.product(*[range(len(d)) for d in domains]))
    atoms = world.atoms
    if any(e.sparse for e in world.layout.values()):
        raise ValueError("the dense reference needs a dense layout (compile with layout='dense')")
    g = np.zeros((len(subs), len(ir.inputs), atoms), dtype=np.float32)
    h = np.zeros((len(subs), world.layout[predicate].size), dtype=np.float32)
    for s, theta in enumerate(subs):
        for i, atom in enumerate(ir.inputs):
            if any(atom.funcs):
                raise ValueError("the dense reference does not handle function terms")
            if [ir.var_types[v] for v in atom.vars] != program.relations[atom.predicate]["types"]:
                raise ValueError("the dense reference does not handle subtyped variables")
            g[s, i, world.atom_slot(atom.predicate, tuple(theta[v] for v in atom.vars))] = 1.0
        h[s, world.atom_slot(predicate, theta[: ir.arity]) - world.layout[predicate].offset] = 1.0
    return torch.from_numpy(g), torch.from_numpy(h)


def dense_run(model: ForwardChainer, world_index: int = 0) -> torch.Tensor:
    """Valuations (K, atoms) after T steps, computed densely with the model's own weights."""
    program = model.program
    world = program.worlds[world_index]
    dtype = next(model.parameters()).dtype
    hots = {p: tuple(t.to(dtype) for t in one_hots(program, world, p)) for p in model.order}
    x = torch.from_numpy(world.valuation.copy()).to(dtype).unsqueeze(0).repeat(model.restarts, 1)
    for _ in range(program.steps):
        for p in model.order:
            g, h = hots[p]
            gathered = torch.einsum("ka,sla->ksl", x, g)
            if program.learned[p].negation:
                gathered = torch.cat([gathered, 1.0 - gathered], dim=-1)
            function = model.functions[p]
            inner, outer = function.memberships()
            gate = function.gate(inner) if function.gate is not None else None
            f = nln_forward(gathered, inner, outer, program.learned[p].form, gate, model.config.fuzzy)  # (K, S)
            if model.config.aggregation == "max":
                new = (f.unsqueeze(-1) * h.unsqueeze(0)).amax(1)
            else:
                # product OR per head atom, 1 - prod(1 - f), in the runtime's precise form
                new = product_or(f.unsqueeze(-1) * h.unsqueeze(0), dim=1)
            offset, size = world.layout[p].offset, world.layout[p].size
            old = x[:, offset : offset + size]
            merged = model.steps_[p].update(old, new)  # the same amalgamation as the sparse runtime
            x = torch.cat([x[:, :offset], merged, x[:, offset + size :]], dim=1)
    return x
