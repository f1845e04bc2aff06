"""Parse a program sketch into the AST, keeping source spans; ``.include`` is resolved here.

Syntax errors become diagnostics (the first per file: the LALR parser stops there); nothing else
raises past :func:`parse_file`, so any input text yields either a Sketch or diagnostics.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

from lark import Lark, Token, Tree, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from nlndl.compiler import ast, grammar_tables
from nlndl.compiler.diagnostics import BOM, CompileError, Diagnostics, Span, clip, size_text
from nlndl.compiler.symbols import MAX_NUMBER, MIN_NUMBER, number_value

TOKEN_NAMES = {
    "IDENT": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "DOT": "'.'",
    "IF": "':-'",
    "BANG": "'!'",
    "COLON": "':'",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "EQUAL": "'='",
    "$END": "end of file",
}


@cache
def grammar() -> Lark:
    return grammar_tables.parser()


def _token_name(terminal: str) -> str:
    if terminal in TOKEN_NAMES:
        return TOKEN_NAMES[terminal]
    try:
        pattern = grammar().get_terminal(terminal).pattern
    except KeyError:
        return terminal.lower()
    return repr(pattern.value) if pattern.type == "str" else terminal.lower().replace("_", " ")


def _describe(expected: set[str]) -> str:
    names = sorted({_token_name(e) for e in expected})
    return ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")


def _syntax_message(exc: UnexpectedInput) -> str:
    if isinstance(exc, UnexpectedCharacters):
        return f"unexpected character {exc.char!r}"
    if isinstance(exc, UnexpectedEOF):
        return f"unexpected end of file; expected {_describe(set(exc.expected))}"
    if isinstance(exc, UnexpectedToken):
        found = "end of file" if exc.token.type == "$END" else repr(str(exc.token))
        return f"unexpected {found}; expected {_describe(set(exc.accepts or exc.expected))}"
    return "syntax error"


def string_value(token: str) -> tuple[str, str | None]:
    """The text of a quoted STRING token and a problem to report, if any: an escape other than \\" or \\\\,
    or a control character (which the tab-separated facts files nlndl writes could not hold)."""
    out, i, body = [], 0, token[1:-1]
    while i < len(body):
        char = body[i]
        if char == "\\":
            escaped = body[i + 1 : i + 2]
            if escaped not in ('"', "\\"):
                return "".join(out), f'unsupported escape \\{escaped} in a string (only \\" and \\\\ are read)'
            out.append(escaped)
            i += 2
            continue
        if ord(char) < 32 or ord(char) == 127:
            return "".join(out), f"control character {char!r} in a string"
        out.append(char)
        i += 1
    return "".join(out), None


class _Builder:
    """Walks a lark tree of one file into the Sketch being built."""

    def __init__(
        self, path: Path, sketch: ast.Sketch, diags: Diagnostics, seen: set[Path], memory_limit: int | None
    ) -> None:
        self.path, self.sketch, self.diags, self.seen = path, sketch, diags, seen
        self.memory_limit = memory_limit
        self.file = str(path)

    def span(self, node: Tree | Token) -> Span:
        if isinstance(node, Token):
            return Span(self.file, node.line or 1, node.column or 1)
        return Span(self.file, node.meta.line, node.meta.column) if not node.meta.empty else Span(self.file, 1, 1)

    def number(self, token: Token) -> int:
        """A NUMBER token as an int in Soufflé's and clingo's 32-bit range (a located error, and 0, beyond it)."""
        value = number_value(str(token))
        if value is None:
            self.diags.error(self.span(token), f"number {clip(str(token))} is out of range {MIN_NUMBER}..{MAX_NUMBER}")
            return 0
        return value

    def string(self, token: Token) -> str:
        """A STRING token's text, with the escapes \\" and \\\\ (the only ones Soufflé and clingo read alike)."""
        text, problem = string_value(str(token))
        if problem is not None:
            self.diags.error(self.span(token), problem)
        return text

    def term(self, node: Tree) -> ast.Term:
        token = node.children[0]
        span = self.span(token)
        if node.data == "number_term":
            return ast.Const(self.number(token), span)
        if node.data == "string_term":
            return ast.Const(self.string(token), span)
        text = str(token)
        return ast.Var(text, span) if text[0].isupper() or text[0] == "_" else ast.Const(text, span)

    def atom(self, node: Tree) -> ast.Atom:
        name, *args = node.children
        terms = tuple(self.term(a) for a in args if a is not None)
        return ast.Atom(str(name), terms, self.span(name))

    def literal(self, node: Tree) -> ast.Literal:
        if node.data == "negated":
            return ast.Literal(self.atom(node.children[0]), negated=True)
        return ast.Literal(self.atom(node))

    def option(self, node: Tree) -> ast.Option:
        key = node.children[0]
        if node.data == "flag":
            return ast.Option(str(key), True, self.span(key))
        value = node.children[1]
        if value.data == "number":
            parsed: str | int | tuple[str, ...] = self.number(value.children[0])
        elif value.data == "names":
            parsed = tuple(str(c) for c in value.children if c is not None)
        else:
            parsed = str(value.children[0])
        return ast.Option(str(key), parsed, self.span(key))

    def closed_option(self, sketch: ast.Sketch, name: str, option: ast.Option) -> None:
        """``.closed p(sample=K)``: train on K negatives per positive example instead of every other atom."""
        if option.key != "sample":
            self.diags.error(option.span, f"unknown .closed option {option.key!r} (the one option is sample=K)")
        elif isinstance(option.value, bool) or not isinstance(option.value, int) or not 1 <= option.value <= MAX_SAMPLE:
            self.diags.error(option.span, f"sample must be a whole number from 1 to {MAX_SAMPLE:,}")
        else:
            sketch.samples[name] = option.value

    def items(self, nodes: list[Tree], world: ast.World) -> None:
        for node in nodes:
            self.item(node, world)

    def item(self, node: Tree, world: ast.World) -> None:
        kind, kids, span = node.data, node.children, self.span(node)
        sketch = self.sketch
        if kind == "type_decl":
            sketch.types.append(ast.TypeDecl(str(kids[0]), str(kids[1]), self.span(kids[0])))
        elif kind == "rel_decl":
            attrs = tuple(
                ast.Attribute(str(a.children[0]), str(a.children[1]), self.span(a.children[1]))
                for a in kids[1:]
                if a is not None
            )
            sketch.relations.append(ast.RelationDecl(str(kids[0]), attrs, self.span(kids[0])))
        elif kind == "io_dir":
            names = [(str(k), self.span(k)) for k in kids[1:]]
            (world.inputs if kids[0] == ".input" else sketch.outputs).extend(names)
        elif kind == "include":
            self.include(kids[0])
        elif kind == "learn_dir":
            options = tuple(self.option(o) for o in kids[1:] if o is not None)
            sketch.learns.append(ast.Learn(str(kids[0]), options, self.span(kids[0])))
        elif kind == "steps_dir":
            if sketch.steps is not None:
                self.diags.error(span, f"duplicate .steps (first at {sketch.steps[1]})")
            sketch.steps = (self.number(kids[0]), span)
        elif kind == "noise_dir":
            if sketch.noise is not None:
                self.diags.error(span, f"duplicate .noise (first at {sketch.noise[1]})")
            sketch.noise = (float(str(kids[0])), span)
        elif kind == "closed_dir":
            for name_node in kids:
                name, *options = name_node.children
                sketch.closed.append((str(name), self.span(name)))
                for option in (self.option(o) for o in options if o is not None):
                    self.closed_option(sketch, str(name), option)
        elif kind == "function_dir":
            sketch.functions.extend((str(k), self.span(k)) for k in kids)
        elif kind == "example":
            atom = self.atom(kids[1])
            world.examples.append(ast.Example(atom, kids[0] == ".pos", span))
        elif kind == "world":
            if world is not sketch.worlds[0]:
                self.diags.error(span, ".world blocks cannot be nested")
                return
            name = str(kids[0])
            if any(w.name == name for w in sketch.worlds):
                self.diags.error(self.span(kids[0]), f"duplicate world {name!r}")
                return
            inner = ast.World(name, self.span(kids[0]))
            sketch.worlds.append(inner)
            self.items(kids[1:], inner)
        elif kind == "clause":
            head, *body = kids
            literals = tuple(self.literal(b) for b in body if b is not None)
            world.clauses.append(ast.Clause(self.atom(head), literals, self.span(head)))

    def include(self, token: Token) -> None:
        target = (self.path.parent / self.string(token)).resolve()
        if target in self.seen:
            self.diags.error(self.span(token), f"cyclic .include of {target}")
            return
        try:
            text = _read(target, "included file", Diagnostics(), self.memory_limit)
        except CompileError as exc:
            reason = exc.diagnostics.errors[0].message
            self.diags.error(self.span(token), f"cannot include {target}: {reason}")
            return
        _parse_into(text, target, self.sketch, self.diags, self.seen | {target}, self.memory_limit)


def _end_of(text: str) -> tuple[int, int]:
    """Line and column just past the last non-blank character (where a missing token belongs)."""
    stripped = text.rstrip()
    lines = stripped.split("\n")
    return len(lines), len(lines[-1]) + 1


def _parse_into(
    text: str, path: Path, sketch: ast.Sketch, diags: Diagnostics, seen: set[Path], memory_limit: int | None = None
) -> None:
    diags.sources[str(path)] = sketch.sources[str(path)] = text
    try:
        tree = grammar().parse(text)
    except UnexpectedInput as exc:
        at_end = isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END")
        line, column = _end_of(text) if at_end else (max(exc.line, 1), max(exc.column, 1))
        diags.error(Span(str(path), line, column), _syntax_message(exc))
        return
    _Builder(path, sketch, diags, seen, memory_limit).items(tree.children, sketch.worlds[0])


def parse_text(
    text: str, filename: str = "<sketch>", memory_limit: int | None = None
) -> tuple[ast.Sketch, Diagnostics]:
    """Parse sketch source; returns the (possibly partial) Sketch and the diagnostics found."""
    sketch = ast.Sketch(worlds=[ast.World("main", None)])
    diags = Diagnostics()
    path = Path(filename)
    _parse_into(text, path, sketch, diags, {path.resolve()} if filename != "<sketch>" else set(), memory_limit)
    return sketch, diags


PARSE_BYTES = 300  # peak memory of parsing, per character of source (measured: 274 on 40,000 facts)
MAX_SAMPLE = 1_000_000  # negatives per positive example under .closed p(sample=K)


def parse_file(path: Path, background: tuple[Path, ...] = (), memory_limit: int | None = None) -> ast.Sketch:
    """Parse a sketch file, then each ``background`` program into it (see :func:`add_background`);
    raises CompileError with every diagnostic if any were found, or if parsing a file would take more than
    ``memory_limit`` bytes (estimated from its size)."""
    return parse_source(_read(path, "sketch", Diagnostics(), memory_limit), str(path), background, memory_limit)


def parse_source(
    text: str, filename: str, background: tuple[Path, ...] = (), memory_limit: int | None = None
) -> ast.Sketch:
    """:func:`parse_file` of a sketch's ``text``, located as ``filename`` in diagnostics."""
    sketch, diags = parse_text(text, filename, memory_limit)
    for extra in background:
        add_background(sketch, extra, diags, memory_limit)
    if diags:
        raise CompileError(diags)
    return sketch


def with_background(sketch: ast.Sketch, background: tuple[Path, ...], memory_limit: int | None = None) -> ast.Sketch:
    """A parsed sketch with each ``background`` program's rules added (a copy: ``sketch`` is left as it is);
    CompileError with every diagnostic."""
    if not background:
        return sketch
    sketch, diags = copy.deepcopy(sketch), Diagnostics(sources=dict(sketch.sources))
    for extra in background:
        add_background(sketch, extra, diags, memory_limit)
    if diags:
        raise CompileError(diags)
    return sketch


def _read(path: Path, what: str, diags: Diagnostics, memory_limit: int | None = None) -> str:
    try:
        if not path.is_file():
            diags.error(Span(str(path), 1, 1), f"cannot read {what}: not a regular file")
            raise CompileError(diags)
        size = path.stat().st_size
        if memory_limit is not None and size * PARSE_BYTES > memory_limit:
            diags.error(
                Span(str(path), 1, 1),
                f"{what} of {size_text(size)} would take about {size_text(size * PARSE_BYTES)} to parse, over the "
                f"limit of {size_text(memory_limit)}; give large fact sets as .facts files (.input), "
                "or raise --memory-limit",
            )
            raise CompileError(diags)
        raw = path.read_bytes()
    except OSError as exc:
        diags.error(Span(str(path), 1, 1), f"cannot read {what}: {exc.strerror or exc}")
        raise CompileError(diags) from None
    try:
        return raw.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as exc:
        diags.error(Span.of_byte(str(path), raw, exc.start), f"{what} is not UTF-8 text (byte 0x{raw[exc.start]:02x})")
        raise CompileError(diags) from None


def add_background(sketch: ast.Sketch, path: Path, diags: Diagnostics, memory_limit: int | None = None) -> None:
    """Add the rules of a Datalog program (such as the ``<name>.dl`` an earlier ``nlndl train`` wrote)
    to ``sketch`` as background rules shared by every world: how a learned predicate becomes background
    knowledge of the next task. Its types and declarations are taken where the sketch lacks them and
    must agree where it has them; ``.input``/``.output`` are ignored; learning directives, examples and
    worlds are errors. Its facts and rules hold in every world."""
    text = _read(path, "background program", diags, memory_limit)
    extra = ast.Sketch(worlds=[ast.World("main", None)])
    _parse_into(text, path, extra, diags, {path.resolve()}, memory_limit)
    sketch.sources.update(extra.sources)
    examples = [(example.span, "an example") for example in extra.worlds[0].examples]
    for span, what in extra.learning_directives() + examples:
        diags.error(span, f"{what} in a background program (it may hold declarations and rules only)")
    types = {t.name: t for t in sketch.types}
    for decl in extra.types:
        known = types.get(decl.name)
        if known is None:
            sketch.types.append(decl)
        elif known.base != decl.base:
            diags.error(decl.span, f"type {decl.name} <: {decl.base} differs from the sketch's ({known.span})")
    relations = {r.name: r for r in sketch.relations}
    for decl in extra.relations:
        known = relations.get(decl.name)
        if known is None:
            sketch.relations.append(decl)
        elif [a.type for a in known.attributes] != [a.type for a in decl.attributes]:
            mine = ", ".join(a.type for a in decl.attributes)
            diags.error(decl.span, f"{decl.name}({mine}) differs from the sketch's declaration at {known.span}")
    sketch.worlds[0].clauses.extend(extra.worlds[0].clauses)
