"""Interned constants: every symbol or number of a program gets one integer id.

Symbols and numbers share one table keyed by (kind, value), so the string "1" and the number 1
stay distinct while joins across relations compare plain integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Value = str | int
MIN_NUMBER, MAX_NUMBER = -(2**31), 2**31 - 1  # Soufflé's default number type, and clingo's integers


def number_value(text: str) -> int | None:
    """``text`` (ASCII digits with an optional minus sign) as an int, or None when it is not one or lies outside
    the 32-bit range; the length is checked before conversion, so a number of any length costs nothing."""
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    digits = digits.lstrip("0") or "0"
    if len(digits) > 10:
        return None
    value = -int(digits) if negative else int(digits)
    return value if MIN_NUMBER <= value <= MAX_NUMBER else None


def quoted(text: str) -> str:
    """A symbol as a Datalog string literal: quoted, ``\\`` and ``"`` escaped, as ``parser.string_value``
    reads it back."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class SymbolTable:
    """Constant <-> id, in first-seen order (deterministic for a given sketch)."""

    values: list[Value] = field(default_factory=list)
    ids: dict[tuple[bool, Value], int] = field(default_factory=dict)

    def intern(self, value: Value) -> int:
        key = (isinstance(value, int), value)
        found = self.ids.get(key)
        if found is None:
            found = self.ids[key] = len(self.values)
            self.values.append(value)
        return found

    def value(self, ident: int) -> Value:
        return self.values[ident]

    def render(self, ident: int) -> str:
        """The constant as Datalog source: numbers bare, symbols quoted."""
        value = self.values[ident]
        if isinstance(value, int):
            return str(value)
        return quoted(value)

    def to_json(self) -> list[Value]:
        return list(self.values)

    @classmethod
    def from_json(cls, values: list[Value]) -> SymbolTable:
        table = cls()
        for value in values:
            table.intern(value)
        return table
