"""Reading ``.input`` relations from ``<fact-dir>/<relation>.facts`` (Soufflé's format).

Tab-separated, no header, no quotes; each field is parsed by its attribute's base type. Problems
are reported at the facts file's line and column.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

from nlndl.compiler.diagnostics import BOM, Diagnostics, Span, clip, size_text
from nlndl.compiler.symbols import MAX_NUMBER, MIN_NUMBER, Value, number_value

CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a control character, not allowed in a symbol
# one in a file's text: a control character other than a tab or a line end (LF, CRLF, or a CR ending the text)
STRAY_CONTROL = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]|\r(?!\n|\Z)")
FACT_BYTES = 64  # memory per character of a facts file, read and interned (measured: 26 on 500,000 pairs)


def gzip_size(path: Path) -> int:
    """The uncompressed size a gzip file records in its last four bytes (modulo 2^32, as gzip keeps it)."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        if handle.tell() < 4:
            return 0
        handle.seek(-4, 2)
        return int.from_bytes(handle.read(4), "little")


def read_facts(
    path: Path, base_types: list[str], diags: Diagnostics, where: Span, memory_limit: int | None = None
) -> list[tuple[Value, ...]]:
    """Rows of ``path`` as typed tuples; on error, diagnostics are added and bad rows skipped. A file whose
    estimated memory is over ``memory_limit`` is refused before it is read. A ``.gz`` file is read through
    gzip; line ends may be ``\\n`` or ``\\r\\n``."""
    if path.exists() and not path.is_file():
        diags.error(where, f"cannot read facts file {path}: not a regular file")
        return []
    try:
        size = path.stat().st_size
        if path.name.endswith(".gz"):
            size = max(size, gzip_size(path))
    except OSError:
        size = 0  # reported below, when it is read
    if memory_limit is not None and size * FACT_BYTES > memory_limit:
        diags.error(
            where,
            f"facts file {path} of {size_text(size)} would take about {size_text(size * FACT_BYTES)} to read, "
            f"over the limit of {size_text(memory_limit)}; raise --memory-limit",
        )
        return []
    try:
        raw = path.read_bytes()
        if path.name.endswith(".gz"):
            raw = gzip.decompress(raw)
    except OSError as exc:
        diags.error(where, f"cannot read facts file {path}: {exc.strerror or exc}")
        return []
    except (EOFError, zlib.error) as exc:
        diags.error(where, f"cannot read {path}: damaged gzip data ({exc})")
        return []
    try:
        text = raw.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as exc:
        diags.error(Span.of_byte(str(path), raw, exc.start), f"not UTF-8 text (byte 0x{raw[exc.start]:02x})")
        return []
    return fact_rows(text, str(path), base_types, diags)


def fact_rows(text: str, file: str, base_types: list[str], diags: Diagnostics) -> list[tuple[Value, ...]]:
    """The rows of a facts file's ``text`` (named ``file`` in diagnostics) as typed tuples; on error,
    diagnostics are added and bad rows skipped."""
    diags.sources[file] = text
    controls = STRAY_CONTROL.search(text)  # fields are searched only in a file with a control character in them
    rows: list[tuple[Value, ...]] = []
    for number, line in enumerate(text.removesuffix("\n").split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(base_types):
            spaced = len(fields) == 1 and len(line.split()) == len(base_types)
            hint = f" (it splits into {len(base_types)} at spaces: separate the fields with tabs)" if spaced else ""
            wanted = f"expected {len(base_types)} tab-separated fields, got {len(fields)}"
            diags.error(Span(file, number, 1), wanted + hint)
            continue
        row: list[Value] = []
        column = 1
        for field, base in zip(fields, base_types, strict=True):
            if not field:
                diags.error(Span(file, number, column), "empty field")
                break
            if base == "number":
                value = number_value(field)
                if value is None:
                    diags.error(
                        Span(file, number, column),
                        f"expected a number in {MIN_NUMBER}..{MAX_NUMBER} (ASCII digits), got {clip(field)!r}",
                    )
                    break
                row.append(value)
            elif controls and CONTROL.search(field):
                diags.error(Span(file, number, column), f"control character in symbol {clip(field)!r}")
                break
            else:
                row.append(field)
            column += len(field) + 1
        else:
            rows.append(tuple(row))
    return rows
