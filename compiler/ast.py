"""The sketch's abstract syntax: what the parser produces and the checker reads.

Every node keeps the span of its first token so that later stages can point at the source.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nlndl.compiler.diagnostics import Span


@dataclass(frozen=True)
class Var:
    name: str
    span: Span


@dataclass(frozen=True)
class Const:
    """A constant: a symbol (quoted string or bare lower-case name) or a number."""

    value: str | int
    span: Span

    @property
    def is_number(self) -> bool:
        return isinstance(self.value, int)


Term = Var | Const


@dataclass(frozen=True)
class Atom:
    predicate: str
    args: tuple[Term, ...]
    span: Span


@dataclass(frozen=True)
class Literal:
    atom: Atom
    negated: bool = False


@dataclass(frozen=True)
class Clause:
    """A fact (empty body) or a background rule."""

    head: Atom
    body: tuple[Literal, ...]
    span: Span


@dataclass(frozen=True)
class TypeDecl:
    name: str
    base: str
    span: Span


@dataclass(frozen=True)
class Attribute:
    name: str
    type: str
    span: Span


@dataclass(frozen=True)
class RelationDecl:
    name: str
    attributes: tuple[Attribute, ...]
    span: Span

    @property
    def arity(self) -> int:
        return len(self.attributes)


@dataclass(frozen=True)
class Option:
    key: str
    value: str | int | tuple[str, ...] | bool
    span: Span


@dataclass(frozen=True)
class Learn:
    """``.learn p(key=value, ...)``: p is learned with the given options."""

    predicate: str
    options: tuple[Option, ...]
    span: Span


@dataclass(frozen=True)
class Example:
    atom: Atom
    positive: bool
    span: Span


@dataclass
class World:
    """Facts, rules and examples that belong to one world of the task."""

    name: str
    span: Span | None
    clauses: list[Clause] = field(default_factory=list)
    examples: list[Example] = field(default_factory=list)
    inputs: list[tuple[str, Span]] = field(default_factory=list)


@dataclass
class Sketch:
    """A whole program sketch. ``worlds[0]`` is the top level; ``.world`` blocks add more."""

    types: list[TypeDecl] = field(default_factory=list)
    relations: list[RelationDecl] = field(default_factory=list)
    outputs: list[tuple[str, Span]] = field(default_factory=list)
    learns: list[Learn] = field(default_factory=list)
    steps: tuple[int, Span] | None = None
    noise: tuple[float, Span] | None = None  # the fraction of wrong labels training tolerates
    closed: list[tuple[str, Span]] = field(default_factory=list)
    samples: dict[str, int] = field(default_factory=dict)  # .closed p(sample=K): K negatives per positive
    functions: list[tuple[str, Span]] = field(default_factory=list)  # relations used as unary functions
    worlds: list[World] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # file name -> text, for diagnostics

    def learning_directives(self) -> list[tuple[Span, str]]:
        """Where each directive that only a sketch may hold stands (examples aside), and what it is: what a
        background program or a rules file, which hold declarations and rules only, must not contain."""
        found = [(learn.span, ".learn") for learn in self.learns]
        found += [(span, ".closed") for _, span in self.closed]
        found += [(span, ".function") for _, span in self.functions]
        found += [(world.span, ".world") for world in self.worlds[1:]]
        found += [(d[1], name) for d, name in ((self.steps, ".steps"), (self.noise, ".noise")) if d is not None]
        return found
