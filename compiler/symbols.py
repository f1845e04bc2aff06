"""Interned constants: every symbol or number of a program gets one integer id.

Symbols and numbers share one table keyed by (kind, value), so the string "1" and the number 1
stay distinct while joins across relations compare plain integers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Value = str | int


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
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def to_json(self) -> list[Value]:
        return list(self.values)

    @classmethod
    def from_json(cls, values: list[Value]) -> SymbolTable:
        table = cls()
        for value in values:
            table.intern(value)
        return table
