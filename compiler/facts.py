"""Reading ``.input`` relations from ``<fact-dir>/<relation>.facts`` (Soufflé's format).

Tab-separated, no header, no quotes; each field is parsed by its attribute's base type. Problems
are reported at the facts file's line and column.
"""

from __future__ import annotations

from pathlib import Path

from nlndl.compiler.diagnostics import Diagnostics, Span
from nlndl.compiler.symbols import Value


def read_facts(path: Path, base_types: list[str], diags: Diagnostics, where: Span) -> list[tuple[Value, ...]]:
    """Rows of ``path`` as typed tuples; on error, diagnostics are added and bad rows skipped."""
    try:
        text = path.read_text()
    except OSError as exc:
        diags.error(where, f"cannot read facts file {path}: {exc.strerror}")
        return []
    diags.sources[str(path)] = text
    rows: list[tuple[Value, ...]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(base_types):
            diags.error(
                Span(str(path), number, 1),
                f"expected {len(base_types)} tab-separated fields, got {len(fields)}",
            )
            continue
        row: list[Value] = []
        column = 1
        for field, base in zip(fields, base_types, strict=True):
            if base == "number":
                try:
                    row.append(int(field))
                except ValueError:
                    diags.error(Span(str(path), number, column), f"expected a number, got {field!r}")
                    break
            else:
                row.append(field)
            column += len(field) + 1
        else:
            rows.append(tuple(row))
    return rows
