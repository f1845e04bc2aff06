"""Running Datalog with an independent engine (clingo, through its Python API)."""

from __future__ import annotations

import clingo

Atom = tuple[str, tuple[str | int, ...]]


class EngineError(RuntimeError):
    """clingo rejected a program; the message carries clingo's own located diagnostics."""


def clingo_model(program: str, predicates: dict[str, int] | None = None) -> set[Atom]:
    """The unique stable model of a stratified program, as (predicate, args) with str/int args; with
    ``predicates`` (name -> arity), only their atoms, shown by ``#show`` (a model holds every fact too, and
    reading those back is most of the cost)."""
    messages: list[str] = []

    def logger(_code: clingo.MessageCode, message: str) -> None:
        messages.append(message.strip())

    control = clingo.Control(["--warn=none"], logger=logger)
    try:
        if predicates is not None:
            program += "\n" + "".join(f"#show {name}/{arity}.\n" for name, arity in sorted(predicates.items()))
        control.add("base", [], program)
        control.ground([("base", [])])
    except RuntimeError as exc:
        raise EngineError("\n".join(messages) or str(exc)) from None
    models: list[set[Atom]] = []
    values: dict[clingo.Symbol, str | int] = {}  # each argument read once: a model repeats its constants
    with control.solve(yield_=True) as handle:
        for model in handle:
            symbols = model.symbols(atoms=True) if predicates is None else model.symbols(shown=True)
            models.append({_atom(s, values) for s in symbols})
    if len(models) != 1:
        raise EngineError(f"expected exactly one model, clingo found {len(models)}")
    return models[0]


def _atom(symbol: clingo.Symbol, values: dict[clingo.Symbol, str | int]) -> Atom:
    """(predicate, arguments) of a symbol; ``values`` holds each argument already read."""
    out = []
    for arg in symbol.arguments:
        value = values.get(arg)
        if value is None:
            value = values[arg] = _value(arg)
        out.append(value)
    return symbol.name, tuple(out)


def _value(arg: clingo.Symbol) -> str | int:
    kind = arg.type
    if kind == clingo.SymbolType.Number:
        return arg.number
    if kind == clingo.SymbolType.String:
        return arg.string
    return str(arg)
