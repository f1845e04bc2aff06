"""The sketch grammar's LALR parser, stored: lark's own serialization of the built parser, as JSON beside
``grammar.lark``, so that a run loads its tables (a few ms) instead of analysing the grammar (tens of ms, in
every ``nlndl`` process that reads a sketch).

The stored tables are used only while they are current: made from this ``grammar.lark`` (its SHA-256) by
this lark version. Otherwise the parser is built from the grammar, as lark does by itself.
``python -c "from nlndl.compiler import grammar_tables; grammar_tables.write()"`` writes them anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib.resources import files
from pathlib import Path
from typing import Any

import lark
from lark import Lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

OPTIONS = {"parser": "lalr", "propagate_positions": True, "maybe_placeholders": True}
TABLES = "grammar.tables.json"
_INT_KEYS, _TUPLE = "(int keys)", "(tuple)"  # JSON has neither: lark's parse table is keyed by state number


def grammar_text() -> str:
    return files("nlndl.compiler").joinpath("grammar.lark").read_text()


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def build(text: str) -> Lark:
    """The parser, built from the grammar by lark."""
    return Lark(text, **OPTIONS)


def load(text: str) -> Lark | None:
    """The parser from the stored tables, or None where they are missing or were made from another grammar
    or by another lark version."""
    try:
        stored = json.loads(files("nlndl.compiler").joinpath(TABLES).read_text(), object_hook=_decode)
    except (OSError, ValueError):
        return None
    if stored.get("grammar_sha256") != digest(text) or stored.get("lark") != lark.__version__:
        return None
    try:
        return Lark.load(stored["tables"])
    except (KeyError, TypeError, ValueError, AttributeError):  # a damaged file: build the parser instead
        return None


def parser() -> Lark:
    """The sketch grammar's parser: from the stored tables where they are current, else built."""
    text = grammar_text()
    return load(text) or build(text)


def tables(text: str) -> dict[str, Any]:
    """What :func:`load` reads: the built parser serialized by lark, with the grammar's digest and lark's
    version."""
    data, memo = build(text).memo_serialize([TerminalDef, Rule])
    return {"grammar_sha256": digest(text), "lark": lark.__version__, "tables": {"data": data, "memo": memo}}


def _encode(value: Any) -> Any:
    """``value`` as JSON keeps it: dicts keyed by int and tuples marked, to be restored by :func:`_decode`."""
    if isinstance(value, dict):
        if value and all(isinstance(k, int) for k in value):
            return {_INT_KEYS: [[k, _encode(v)] for k, v in value.items()]}
        if not all(isinstance(k, str) for k in value) or {_INT_KEYS, _TUPLE} & value.keys():
            raise ValueError(f"lark's tables hold a dict that JSON cannot keep: keys {sorted(map(repr, value))}")
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {_TUPLE: [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise ValueError(f"lark's tables hold a {type(value).__name__}, which JSON cannot keep")


def _decode(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _INT_KEYS in obj:
        return {k: v for k, v in obj[_INT_KEYS]}
    if len(obj) == 1 and _TUPLE in obj:
        return tuple(obj[_TUPLE])
    return obj


def encoded(text: str) -> str:
    """The stored file's text for ``text``'s grammar."""
    return json.dumps(_encode(tables(text)), sort_keys=True, separators=(",", ":")) + "\n"


def write(path: Path | None = None) -> Path:
    """Write the tables of the installed ``grammar.lark`` to ``path`` (default: beside it), whole or not at
    all; returns where."""
    path = path or Path(str(files("nlndl.compiler").joinpath(TABLES)))
    content = encoded(grammar_text())
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(content)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
