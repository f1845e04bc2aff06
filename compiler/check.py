"""Semantic checks of a parsed sketch, all collected: names, arities, types, safety, examples, strata.

The result is a :class:`Checked` program: relations with resolved base types, learned-predicate
settings with defaults filled in, and the dependency graph's strata.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from nlndl.compiler import ast
from nlndl.compiler.depgraph import Strata, build_graph, stratify
from nlndl.compiler.diagnostics import CompileError, Diagnostics, Span
from nlndl.compiler.graphs import descendants
from nlndl.compiler.ir import AMALGAMATIONS, projected
from nlndl.defaults import MAX_NOISE, MAX_STEPS

BASE_TYPES = ("symbol", "number")
# Names that Soufflé or clingo treat specially; a predicate so named would not export unchanged.
RESERVED = frozenset(
    {
        "not",
        "count",
        "sum",
        "min",
        "max",
        "mean",
        "range",
        "match",
        "contains",
        "cat",
        "ord",
        "strlen",
        "substr",
        "to_number",
        "to_string",
        "to_float",
        "to_unsigned",
        "symbol",
        "number",
        "unsigned",
        "float",
        "as",
        "nil",
        "true",
        "false",
        "band",
        "bor",
        "bxor",
        "bnot",
        "bshl",
        "bshr",
        "bshru",
        "land",
        "lor",
        "lxor",
        "lnot",
        "mod",
        "autoinc",
        "inf",
        "sup",
        "show",
        "const",
        "include",
    }
)
LEARN_KEYS = {
    "vars",
    "types",
    "form",
    "terms",
    "body",
    "exclude",
    "negation",
    "invented",
    "prune",
    "norepeat",
    "repeat",
    "functions",
    "amalgamation",
}
PRUNE_MODES = ("auto", "extensional", "path", "none")
# Candidate atoms that repeat a variable: in any atom (all), in atoms of at most two arguments (binary:
# edge(A,A) stays, cons(A,B,A) goes), or in none. In atoms of three or more arguments they are most of
# the candidates (40 of cons/3's 64 over four variables) and rarely what a rule needs.
REPEAT_MODES = ("binary", "all", "none")
MAX_VARS = 32  # variables of a learned clause: |D|^vars substitutions
MAX_TERMS = 4096  # conjunctions (DNF) or disjunctions (CNF) per learned predicate
FORMS = ("dnf", "cnf")


@dataclass(frozen=True)
class LearnSpec:
    """A learned predicate's settings, defaults filled in."""

    predicate: str
    vars: int
    var_types: tuple[str, ...]  # one per variable: the head's attribute types, then the extra variables'
    head_arity: int
    form: str
    terms: int
    body: tuple[str, ...]
    negation: bool
    invented: bool
    prune: str
    span: Span
    repeat: str = "binary"  # which candidate atoms may repeat a variable, one of REPEAT_MODES
    functions: tuple[str, ...] = ()  # unary functions that may be applied to variables, e.g. H(A)
    negated: tuple[str, ...] = ()  # with negation: the body predicates that do not depend on this one
    amalgamation: str = "replace"  # see AMALGAMATIONS

    @property
    def extra(self) -> int:
        """Number of variables beyond the head's."""
        return self.vars - self.head_arity


@dataclass
class Checked:
    sketch: ast.Sketch
    types: dict[str, str] = field(default_factory=dict)  # type name -> base type
    parents: dict[str, str] = field(default_factory=dict)  # declared type -> the type it is a subtype of
    relations: dict[str, ast.RelationDecl] = field(default_factory=dict)
    learned: dict[str, LearnSpec] = field(default_factory=dict)
    strata: Strata | None = None
    dependencies: list[tuple[str, str, bool]] = field(default_factory=list)  # (body, head, negated)
    # projections of binary background relations that a learned predicate may negate (name -> relation,
    # argument kept): edge[0](X) :- edge(X, _), so that a clause can say !edge(X, _)
    projections: dict[str, tuple[str, int]] = field(default_factory=dict)

    def supertypes(self, name: str) -> list[str]:
        """``name`` and every type it is a subtype of, nearest first (``.type Pair <: L`` gives Pair, L, symbol)."""
        chain = [name]
        while chain[-1] in self.parents:
            chain.append(self.parents[chain[-1]])
        return chain

    def is_subtype(self, sub: str, sup: str) -> bool:
        """Whether a value of type ``sub`` may stand where ``sup`` is expected (Soufflé's subtyping)."""
        return sup in self.supertypes(sub)


def flag_set(option: ast.Option | None) -> bool:
    """Whether a flag option is on (``negation``, ``negation=true``); :meth:`_Checker.flag_option` reports any
    value other than true or false."""
    return option is not None and option.value in (True, "true")


class _Checker:
    def __init__(self, sketch: ast.Sketch, diags: Diagnostics) -> None:
        self.sketch, self.diags = sketch, diags
        self.out = Checked(sketch, types={b: b for b in BASE_TYPES})

    def error(self, span: Span, message: str) -> None:
        self.diags.error(span, message)

    def run(self) -> Checked:
        self.check_types()
        self.check_relations()
        self.check_learns()
        self.check_functions()
        for world in self.sketch.worlds:
            self.check_world(world)
        for name, span in self.sketch.outputs:
            self.known(name, span, ".output")
        for name, span in self.sketch.closed:
            if name not in self.out.learned and self.known(name, span, ".closed"):
                self.error(span, f"'.closed {name}': {name} is not a learned predicate")
        if self.sketch.steps is not None and self.sketch.steps[0] > MAX_STEPS:
            self.error(self.sketch.steps[1], f".steps must be at most {MAX_STEPS:,}, got {self.sketch.steps[0]:,}")
        if self.sketch.steps is not None and self.sketch.steps[0] < 1:
            self.error(self.sketch.steps[1], f".steps must be at least 1, got {self.sketch.steps[0]}")
        if self.sketch.noise is not None and not 0 <= self.sketch.noise[0] <= MAX_NOISE:
            self.error(
                self.sketch.noise[1], f".noise must be a fraction from 0 to {MAX_NOISE}, got {self.sketch.noise[0]:g}"
            )
        self.check_examples_present()
        self.check_strata()
        return self.out

    def check_types(self) -> None:
        for decl in self.sketch.types:
            if decl.name in self.out.types:
                self.error(decl.span, f"type {decl.name} is declared twice")
            elif decl.base not in self.out.types:
                self.error(decl.span, f"unknown base type {decl.base} (expected symbol, number or a declared type)")
            else:
                self.out.types[decl.name] = self.out.types[decl.base]
                self.out.parents[decl.name] = decl.base

    def check_relations(self) -> None:
        for decl in self.sketch.relations:
            if decl.name in self.out.relations:
                first = self.out.relations[decl.name].span
                self.error(decl.span, f"relation {decl.name} is declared twice (first at {first})")
                continue
            if decl.name in RESERVED:
                self.error(decl.span, f"'{decl.name}' is reserved in Soufflé or clingo; choose another name")
            for attr in decl.attributes:
                if attr.type not in self.out.types:
                    self.error(attr.span, f"unknown type {attr.type} in declaration of {decl.name}")
            self.out.relations[decl.name] = decl

    def known(self, name: str, span: Span, where: str) -> bool:
        if name not in self.out.relations:
            self.error(span, f"undeclared relation {name} in {where}")
            return False
        return True

    def check_atom(self, atom: ast.Atom, where: str) -> bool:
        if not self.known(atom.predicate, atom.span, where):
            return False
        decl = self.out.relations[atom.predicate]
        if len(atom.args) != decl.arity:
            self.error(
                atom.span,
                f"mismatching arity of relation {atom.predicate} (expected {decl.arity}, got {len(atom.args)})",
            )
            return False
        for position, (arg, attr) in enumerate(zip(atom.args, decl.attributes, strict=True)):
            base = self.out.types.get(attr.type)
            if isinstance(arg, ast.Const) and base is not None and arg.is_number != (base == "number"):
                kind = "number" if arg.is_number else "symbol"
                self.error(
                    arg.span,
                    f"{kind} constant {arg.value!r} in argument {position + 1} of "
                    f"{atom.predicate}, whose type {attr.type} is a {base}",
                )
        return True

    def check_learns(self) -> None:
        # a learned predicate with negation is meant to negate the others: a learned predicate without it, whose
        # body is the default, leaves it out, so that reading it does not make the two one recursive component
        # (whose members may not negate each other)
        negating = {
            learn.predicate
            for learn in self.sketch.learns
            if flag_set({o.key: o for o in learn.options}.get("negation"))
        }
        for learn in self.sketch.learns:
            if learn.predicate in self.out.learned:
                self.error(learn.span, f"{learn.predicate} has two .learn directives")
                continue
            if not self.known(learn.predicate, learn.span, ".learn"):
                continue
            arity = self.out.relations[learn.predicate].arity
            opts = {o.key: o for o in learn.options}
            for option in learn.options:
                if option.key not in LEARN_KEYS:
                    self.error(
                        option.span,
                        f"unknown .learn option '{option.key}' (expected one of {', '.join(sorted(LEARN_KEYS))})",
                    )
            n_vars = self.int_option(opts.get("vars"), arity + 1, minimum=max(arity, 1), maximum=MAX_VARS)
            terms = self.int_option(opts.get("terms"), 4, minimum=1, maximum=MAX_TERMS)
            form = self.word_option(opts.get("form"), "dnf", FORMS)
            default = tuple(self.out.relations)
            if learn.predicate not in negating:
                default = tuple(r for r in default if r == learn.predicate or r not in negating)
            body = self.names_option(opts.get("body"), default)
            excluded = set(self.names_option(opts.get("exclude"), ()))
            body = tuple(b for b in body if b not in excluded)
            head_types = tuple(a.type for a in self.out.relations[learn.predicate].attributes)
            extra_types = self.extra_types(opts.get("types"), learn, head_types, body, n_vars - arity)
            spec = LearnSpec(
                predicate=learn.predicate,
                vars=n_vars,
                var_types=head_types + extra_types,
                head_arity=arity,
                form=form,
                terms=terms,
                body=body,
                negation=self.flag_option(opts.get("negation")),
                invented=self.flag_option(opts.get("invented")),
                prune=self.word_option(opts.get("prune"), "extensional", PRUNE_MODES),
                span=learn.span,
                repeat=self.repeat_option(opts.get("repeat"), opts.get("norepeat")),
                functions=self.functions_option(opts.get("functions")),
                amalgamation=self.word_option(opts.get("amalgamation"), "replace", AMALGAMATIONS),
            )
            self.out.learned[learn.predicate] = spec

    def extra_types(
        self,
        option: ast.Option | None,
        learn: ast.Learn,
        head: tuple[str, ...],
        body: tuple[str, ...],
        n: int,
    ) -> tuple[str, ...]:
        """Types of the extra variables: from ``types=[...]``, or the one type in use if unambiguous."""
        if option is not None:
            names = (option.value,) if isinstance(option.value, str) else option.value
            if not isinstance(names, tuple) or len(names) not in (1, n) or any(t not in self.out.types for t in names):
                self.error(option.span, f"'types' must list {n} declared type(s) for the extra variables")
                return (head[0] if head else "symbol",) * n
            return tuple(names) * (n if len(names) == 1 else 1)
        in_use = set(head) | {a.type for q in body for a in self.out.relations[q].attributes}
        if n and len(in_use) > 1:
            self.error(
                learn.span,
                f"the {n} extra variable(s) of {learn.predicate} could have any of the types "
                f"{', '.join(sorted(in_use))}; say which with types=[...]",
            )
        return (min(in_use) if in_use else "symbol",) * n

    def functions_option(self, option: ast.Option | None) -> tuple[str, ...]:
        names = self.names_option(option, ())
        declared = {name for name, _ in self.sketch.functions}
        for name in names:
            if name not in declared:
                self.error(option.span, f"{name} is not declared with '.function {name}'")
        return tuple(n for n in names if n in declared)

    def check_functions(self) -> None:
        for name, span in self.sketch.functions:
            if not self.known(name, span, ".function"):
                continue
            if self.out.relations[name].arity != 2:
                self.error(
                    span,
                    f".function {name}: a function relation has two attributes (input, output), "
                    f"{name} has {self.out.relations[name].arity}",
                )
            if name in self.out.learned:
                self.error(span, f".function {name}: a learned predicate cannot be a function")

    def int_option(self, option: ast.Option | None, default: int, minimum: int, maximum: int) -> int:
        if option is None:
            return default
        if (
            not isinstance(option.value, int)
            or isinstance(option.value, bool)
            or not minimum <= option.value <= maximum
        ):
            self.error(option.span, f"'{option.key}' must be an integer from {minimum} to {maximum:,}")
            return default
        return option.value

    def word_option(self, option: ast.Option | None, default: str, choices: tuple[str, ...]) -> str:
        if option is None:
            return default
        if option.value not in choices:
            self.error(option.span, f"'{option.key}' must be one of {', '.join(choices)}")
            return default
        return str(option.value)

    def repeat_option(self, option: ast.Option | None, norepeat: ast.Option | None) -> str:
        """``repeat=...``, or ``norepeat`` (short for ``repeat=none``); not both."""
        if norepeat is not None and option is not None:
            self.error(norepeat.span, "'norepeat' is short for 'repeat=none': give one of them")
        if norepeat is not None:
            return "none" if self.flag_option(norepeat) else "all"
        return self.word_option(option, REPEAT_MODES[0], REPEAT_MODES)

    def names_option(self, option: ast.Option | None, default: tuple[str, ...]) -> tuple[str, ...]:
        if option is None:
            return default
        names = (option.value,) if isinstance(option.value, str) else option.value
        if not isinstance(names, tuple):
            self.error(option.span, f"'{option.key}' must be a list of relation names, e.g. [edge, path]")
            return default
        for name in names:
            self.known(name, option.span, f"'{option.key}'")
        return tuple(n for n in names if n in self.out.relations)

    def flag_option(self, option: ast.Option | None) -> bool:
        if option is None:
            return False
        if option.value is True or option.value in ("true", "false"):
            return flag_set(option)
        self.error(option.span, f"'{option.key}' is a flag: write '{option.key}' or '{option.key}=false'")
        return False

    def check_world(self, world: ast.World) -> None:
        for name, span in world.inputs:
            self.known(name, span, ".input")
        for clause in world.clauses:
            self.check_clause(clause)
        for example in world.examples:
            if not self.check_atom(example.atom, "example"):
                continue
            if example.atom.predicate not in self.out.learned:
                self.error(
                    example.span,
                    f"example of {example.atom.predicate}, which is not learned "
                    f"(add '.learn {example.atom.predicate}')",
                )
            for arg in example.atom.args:
                if isinstance(arg, ast.Var):
                    self.error(arg.span, f"examples must be ground; found variable {arg.name}")

    def check_clause(self, clause: ast.Clause) -> None:
        head_ok = self.check_atom(clause.head, "fact" if not clause.body else "rule head")
        if head_ok and clause.head.predicate in self.out.learned:
            self.error(
                clause.head.span,
                f"{clause.head.predicate} is learned; it cannot also have "
                "facts or background rules (use .pos/.neg examples)",
            )
        for literal in clause.body:
            self.check_atom(literal.atom, "rule body")
        what = "fact" if not clause.body else "rule"
        for arg, place in unsafe_arguments(clause):
            if place == "anonymous head":
                head = "fact" if not clause.body else "rule head"
                self.error(arg.span, f"'_' in a {head}: a head argument must be a constant or a body variable")
            else:
                self.error(arg.span, f"variable {arg.name} is not bound by a positive body atom (unsafe {what})")

    def check_examples_present(self) -> None:
        if len(self.sketch.worlds) > 1:
            for example in self.sketch.worlds[0].examples:
                self.error(example.span, "with .world blocks, examples belong inside a world")
        closed = {name for name, _ in self.sketch.closed}
        with_examples = {e.atom.predicate for w in self.sketch.worlds for e in w.examples if e.positive}
        for spec in self.out.learned.values():
            if not spec.invented and spec.predicate not in with_examples and spec.predicate not in closed:
                self.error(
                    spec.span,
                    f"learned predicate {spec.predicate} has no positive examples "
                    "(add .pos examples, or mark it 'invented')",
                )

    def check_strata(self) -> None:
        edges = [
            (lit.atom.predicate, clause.head.predicate, lit.negated)
            for world in self.sketch.worlds
            for clause in world.clauses
            for lit in clause.body
        ]
        # a learned predicate may negate only body predicates that do not depend on it (stratified negation):
        # its own atoms and those of its recursive component stay positive
        reads = build_graph(edges + [(q, s.predicate, False) for s in self.out.learned.values() for q in s.body], [])
        ruled = {clause.head.predicate for world in self.sketch.worlds for clause in world.clauses if clause.body}
        derived = set().union(*(descendants(reads, name) for name in self.out.learned), self.out.learned, ruled)
        for name, spec in self.out.learned.items():
            if spec.negation:
                above = descendants(reads, name) | {name}
                spec = replace(spec, negated=tuple(q for q in spec.body if q not in above))
                spec = self.out.learned[name] = self.with_projections(spec, derived)
            edges += [(q, spec.predicate, q in spec.negated) for q in spec.body]
        edges += [(q, name, False) for name, (q, _) in self.out.projections.items()]
        self.out.dependencies = sorted(set(edges))
        graph = build_graph(edges, list(self.out.relations))
        strata = stratify(graph)
        for cycle in strata.negative_cycles:
            members = set(cycle)
            spans = [
                lit.atom.span
                for world in self.sketch.worlds
                for clause in world.clauses
                if clause.head.predicate in members
                for lit in clause.body
                if lit.negated and lit.atom.predicate in members
            ]
            spans += [s.span for s in self.out.learned.values() if s.predicate in members and s.negation]
            self.error(
                min(spans, key=lambda sp: (sp.file, sp.line, sp.column)),
                f"unstratifiable negation: {cycle[0]} depends on itself through negation"
                if len(cycle) == 1
                else f"unstratifiable negation: {', '.join(cycle)} depend on each other through negation",
            )
        self.out.strata = strata
        losing = can_lose_atoms(self.out.dependencies, set(self.out.learned))
        for learn in self.sketch.learns:
            spec = self.out.learned.get(learn.predicate)
            if spec is not None and spec.amalgamation != "replace" and spec.predicate in losing:
                option = next(o for o in learn.options if o.key == "amalgamation")
                self.error(
                    option.span,
                    f"amalgamation={spec.amalgamation} keeps every atom a step derived, but {spec.predicate} can lose "
                    f"atoms from one step to the next ({losing[spec.predicate]}); use replace",
                )

    def with_projections(self, spec: LearnSpec, derived: set[str]) -> LearnSpec:
        """``spec`` with the projections of each binary relation it may negate that only facts define (no
        rule, learned or background, derives it), ``q[0]`` and ``q[1]``, in its body and negatable: ``!q(X, _)``
        says X has no q at all, which no clause over ``q(X, Y)`` can (Y would stand in a negated atom alone)."""
        made: list[str] = []
        for q in spec.negated:
            decl = self.out.relations[q]
            if q in derived or decl.arity != 2:
                continue
            for position, attribute in enumerate(decl.attributes):
                name = projected(q, position)
                if name not in self.out.relations:
                    self.out.relations[name] = ast.RelationDecl(name, (attribute,), decl.span)
                    self.out.projections[name] = (q, position)
                made.append(name)
        return replace(spec, body=spec.body + tuple(made), negated=spec.negated + tuple(made))


def unsafe_arguments(clause: ast.Clause) -> list[tuple[ast.Var, str]]:
    """The variables that make ``clause`` unsafe, each with where it stands: ``anonymous head`` (``_`` in the
    head), ``head`` or ``negated atom`` (a named variable that no positive body atom binds)."""
    bound = {a.name for lit in clause.body if not lit.negated for a in lit.atom.args if isinstance(a, ast.Var)}
    unsafe = []
    for atom, place in ((clause.head, "head"), *((lit.atom, "negated atom") for lit in clause.body if lit.negated)):
        for arg in atom.args:
            if isinstance(arg, ast.Var) and arg.name == "_" and place == "head":
                unsafe.append((arg, "anonymous head"))
            elif isinstance(arg, ast.Var) and arg.name != "_" and arg.name not in bound:
                unsafe.append((arg, place))
    return unsafe


def can_lose_atoms(dependencies: list[tuple[str, str, bool]], learned: set[str]) -> dict[str, str]:
    """The learned predicates whose valuation can lose an atom between forward-chaining steps, each with why:
    one that negates a learned predicate (whose atoms appear step by step), or reads one that can. The others
    only gain atoms from step to step (monotone steps from the empty valuation), so for them keeping what
    earlier steps derived changes no crisp program's meaning."""
    losing: dict[str, str] = {}
    grown = True
    while grown:
        grown = False
        for body, head, negated in dependencies:
            if head in learned and head not in losing and body in learned and (negated or body in losing):
                losing[head] = f"it negates the learned {body}" if negated else f"it reads {body}, which can"
                grown = True
    return losing


def check(sketch: ast.Sketch, diags: Diagnostics | None = None) -> Checked:
    """Check ``sketch``; raises CompileError carrying every diagnostic if any were found."""
    diags = diags if diags is not None else Diagnostics()
    diags.sources.update(sketch.sources)
    checked = _Checker(sketch, diags).run()
    if diags:
        raise CompileError(diags)
    return checked
