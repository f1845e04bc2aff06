"""nlndl runtime: NLN layers and the differentiable execution of compiled programs (torch)."""

from nlndl.runtime.formula import Formula, Literal
from nlndl.runtime.init import Init
from nlndl.runtime.layers import Conjunction, Disjunction, Xor, xor_formula
from nlndl.runtime.mlp import MLP
from nlndl.runtime.networks import NormalForm

__all__ = [
    "MLP",
    "Conjunction",
    "Disjunction",
    "Formula",
    "Init",
    "Literal",
    "NormalForm",
    "Xor",
    "xor_formula",
]
